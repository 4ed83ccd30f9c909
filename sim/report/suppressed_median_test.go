package report

import (
	"bytes"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestSuppressedMedianKeepsItsHalf: with two seeds a suppressed-hedge cell is their mean, which
// is often a half. Printed with no decimals, strconv rounds a half to even, so a setup one seed
// of which suppressed a hedge read "0" (docs/reference/report.md, "recommended", backlog, 50 %,
// seeds 1 and 0) and seeds 1 and 2 read "2", the same as two seeds of 2.
func TestSuppressedMedianKeepsItsHalf(t *testing.T) {
	point := func(seed uint64, load float64, n int64) sim.Point {
		return sim.Point{Setup: "s", LoadPct: load, Cancellation: sim.Ignored, Seed: seed,
			P50Ms: 10, P99Ms: 20, P999Ms: 30, RequestsPerCall: 1,
			Suppressed: map[string]int64{"backlog": n}}
	}
	r := sim.Report{
		Model: sim.Model{Calls: 1000, Seeds: []uint64{1, 2}, LoadsPct: []float64{30, 50, 70},
			Setups: []string{"s"}, Cancellations: []string{sim.Ignored}},
		Points: []sim.Point{
			point(1, 30, 1), point(2, 30, 0), // mean 0.5
			point(1, 50, 1), point(2, 50, 2), // mean 1.5
			point(1, 70, 2), point(2, 70, 2), // mean 2
		},
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	row := mdRow(t, b.String(), "## Cancellation ignored", "Suppressed hedges by reason", "s")
	want := []string{"s", "backlog", "0.5", "1.5", "2"}
	if len(row) != len(want) {
		t.Fatalf("row %q, want %q", row, want)
	}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("row %q, want %q: the cell shows a figure other than the one computed", row, want)
			break
		}
	}
}
