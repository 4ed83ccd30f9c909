package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// A point that collapsed while its calls were still warming up measured none: its per-call
// figures are zeros, not figures. A cell of such points shows "collapse", as a latency cell
// does, and such a seed is left out of a cell whose other seeds measured calls (the reference
// report showed "3 attempts, no budget" at 95 % as 0.000 requests per call).
func TestCollapseBeforeMeasuringShowsNoFigure(t *testing.T) {
	point := func(seed uint64, load float64, calls int, rpc float64) sim.Point {
		return sim.Point{Setup: "s", LoadPct: load, Cancellation: sim.Ignored, Seed: seed,
			Collapse: true, Calls: calls, RequestsPerCall: rpc, UtilisationPct: 99}
	}
	r := sim.Report{
		Model: sim.Model{Calls: 1000, WarmupFraction: 0.1, Seeds: []uint64{1, 2, 3}, LoadsPct: []float64{85, 95},
			Setups: []string{"s"}, Cancellations: []string{sim.Ignored}},
		Points: []sim.Point{
			// At 85 % two seeds measured calls, one stopped at its 60th (of 100 warm-up calls).
			point(1, 85, 400, 1.9), point(2, 85, 60, 0), point(3, 85, 500, 2.0),
			// At 95 % every seed stopped before its 100th call.
			point(1, 95, 100, 0), point(2, 95, 30, 0), point(3, 95, 0, 0),
		},
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		title string
		want  []string
	}{
		{"Requests per call", []string{"s", "1.950 *", "collapse"}},
		{"Worker utilisation", []string{"s", "99.0 *", "collapse"}},
		{"p99 latency", []string{"s", "collapse", "collapse"}},
	} {
		if row := mdRow(t, b.String(), "## Cancellation ignored", c.title, "s"); !slices.Equal(row, c.want) {
			t.Errorf("%s: row %q, want %q", c.title, row, c.want)
		}
	}
	b.Reset()
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); !strings.Contains(html, ">1.950 *<") || strings.Contains(html, ">0.000 *<") {
		t.Errorf("report.html's requests per call: want 1.950 * at 85 %% and no 0.000 *")
	}
}
