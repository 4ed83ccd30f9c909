package main

import (
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

func pt(p50, p99, p999 float64) sim.Point { return sim.Point{P50Ms: p50, P99Ms: p99, P999Ms: p999} }

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		real, sim  sim.Point
		overheadMs float64
		ok         bool
		why        string
	}{
		{"equal", pt(10, 200, 290), pt(10, 200, 290), 0, true, ""},
		{"inside the band", pt(11.4, 180, 320), pt(10, 200, 290), 0, true, ""},
		{"p99 outside", pt(10, 240, 290), pt(10, 200, 290), 0, false, "p99_ms real 240.0, simulated 200.0"},
		{"explained by the overhead", pt(12, 200, 290), pt(10, 200, 290), 1, true, ""},
		{"not explained by the overhead", pt(13, 200, 290), pt(10, 200, 290), 1, false, "p50_ms"},
		{"overhead only subtracts", pt(8, 200, 290), pt(10, 200, 290), 1, false, "p50_ms real 8.0"},
		{"both fail", pt(10, 200, failedMs), pt(10, 200, failedMs), 0, true, ""},
		{"only real fails", pt(10, 200, failedMs), pt(10, 200, 290), 0, false, "p999_ms real failed"},
		{"both collapse", sim.Point{Collapse: true}, sim.Point{Collapse: true}, 0, true, ""},
		{"only the simulator collapses", pt(10, 200, 290), sim.Point{Collapse: true}, 0, false, "collapse: real false, simulated true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := compare(tc.real, tc.sim, tc.overheadMs, 15)
			if a.OK != tc.ok {
				t.Errorf("OK = %v, want %v (%+v)", a.OK, tc.ok, a)
			}
			if !strings.Contains(a.Why, tc.why) || (tc.why == "") != (a.Why == "") {
				t.Errorf("Why = %q, want it to say %q", a.Why, tc.why)
			}
		})
	}
}
