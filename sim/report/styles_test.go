package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestEverySetupHasItsOwnStyle renders a report of every setup the simulator knows, as the
// default run does, and checks that no two entries of a chart's legend are drawn alike: with
// one style per palette entry, taken modulo ten, "server-assisted" was drawn exactly as
// "no hedge", "server-assisted, out-of-band" as "hedge, no budget" and "deadline-aware" as
// "hedge, default budget".
func TestEverySetupHasItsOwnStyle(t *testing.T) {
	setups := sim.SetupNames()
	if len(setups) <= len(lineColours) {
		t.Fatalf("%d setups, %d colours: the test needs more setups than colours", len(setups), len(lineColours))
	}
	r := sim.Report{Model: sim.Model{
		Workers: 16, ServiceTime: "mixture", MeanServiceMs: 14, HedgeDelayMs: 20, Calls: 20000,
		WarmupFraction: 0.1, Seeds: []uint64{1}, LoadsPct: []float64{30, 70}, Setups: setups,
		Cancellations: []string{"ignored"},
	}}
	for i, s := range setups {
		for _, l := range r.Model.LoadsPct {
			r.Points = append(r.Points, sim.Point{Setup: s, LoadPct: l, Cancellation: "ignored", Seed: 1,
				P50Ms: 10, P99Ms: 30 + float64(i), P999Ms: 40 + float64(i), RequestsPerCall: 1,
				Suppressed: map[string]int64{}, Calls: 20000})
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	svg, _, ok := strings.Cut(b.String(), "</svg>")
	if !ok {
		t.Fatal("report.html has no chart")
	}
	// A legend entry: its line sample (colour, dash), its marker, then the setup's name.
	entry := regexp.MustCompile(`(?m)^<line [^>]*stroke="([^"]+)" stroke-width="2"(?: stroke-dasharray="([^"]*)")?/>(<[^>]+>)<text [^>]*>([^<]*)</text>$`)
	coords := regexp.MustCompile(`-?[0-9]+\.[0-9]`)
	drawnAs := map[string]string{}
	entries := entry.FindAllStringSubmatch(svg, -1)
	if len(entries) != len(setups) {
		t.Fatalf("the chart's legend has %d entries, want one per setup (%d)", len(entries), len(setups))
	}
	for _, m := range entries {
		look := m[1] + " | " + m[2] + " | " + coords.ReplaceAllString(m[3], "N")
		if other, ok := drawnAs[look]; ok {
			t.Errorf("%q is drawn exactly as %q (%s)", m[4], other, look)
		}
		drawnAs[look] = m[4]
	}
}

// TestStylesDifferPastThePalette: series that share a colour (every tenth) share neither dash
// nor marker, for as many series as a chart of several balancers holds.
func TestStylesDifferPastThePalette(t *testing.T) {
	seen := map[[2]string]int{}
	for i := range 100 {
		colour, dash, marker := style(i)
		for _, k := range [][2]string{{colour, dash}, {colour, marker}} {
			if j, ok := seen[k]; ok {
				t.Errorf("series %d and %d share %q and %q", j, i, k[0], k[1])
			}
			seen[k] = i
		}
	}
}
