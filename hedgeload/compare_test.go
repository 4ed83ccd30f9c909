package main

import (
	"math"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

func pt(p50, p99, p999 float64) sim.Point { return sim.Point{P50Ms: p50, P99Ms: p99, P999Ms: p999} }

func TestCompare(t *testing.T) {
	collapse := sim.Point{Collapse: true}
	ref := []sim.Point{pt(10, 200, 290)}
	// Three seeds of a bursty point: a p99 anywhere from 26 to 300 ms.
	bursty := []sim.Point{pt(10, 26, 33), pt(10, 90, 180), pt(10, 300, 400)}
	for _, tc := range []struct {
		name string
		real sim.Point
		sims []sim.Point
		ok   bool
		by   string // of the p50 check, or the first failing one
		why  string
	}{
		{"equal", pt(10, 200, 290), ref, true, "band", ""},
		{"inside the band", pt(10.4, 180, 320), ref, true, "band", ""},
		{"p50 inside the loose band, outside the tight one", pt(11.4, 200, 290), ref, false, "", "p50_ms real 11.4"},
		{"p50 10 % slow", pt(11, 200, 290), ref, false, "", "p50_ms real 11.0"},
		{"p50 10 % fast", pt(9, 200, 290), ref, false, "", "p50_ms real 9.0"},
		{"p99 outside", pt(10, 240, 290), ref, false, "", "p99_ms real 240.0, simulated 200.0"},
		{"p50 outside the seeds' median, inside their range", pt(10.6, 200, 290), []sim.Point{pt(9.5, 200, 290), pt(10, 200, 290), pt(11, 200, 290)}, false, "", "p50_ms"},
		{"within one seed of the spread", pt(10, 80, 170), bursty, true, "band", ""},
		{"between two seeds of the spread", pt(10, 60, 250), bursty, true, "band", ""},
		{"below every seed", pt(10, 20, 170), bursty, false, "", "p99_ms real 20.0, simulated 90.0 (seeds 26.0–300.0)"},
		{"outside every seed", pt(10, 500, 600), bursty, false, "", "p99_ms real 500.0, simulated 90.0 (seeds 26.0–300.0)"},
		{"both fail", pt(10, 200, sim.Failed), []sim.Point{pt(10, 200, sim.Failed)}, true, "band", ""},
		{"only real fails", pt(10, 200, sim.Failed), ref, false, "", "p999_ms real failed"},
		{"both collapse", collapse, []sim.Point{collapse, collapse}, true, "", ""},
		{"real collapses, one seed too", collapse, []sim.Point{collapse, pt(10, 200, 290)}, true, "", ""},
		{"only the simulator collapses", pt(10, 200, 290), []sim.Point{collapse}, false, "", "collapse: real false, simulated in 1 of 1 seeds"},
		{"only the real run collapses", collapse, ref, false, "", "collapse: real true, simulated in 0 of 1 seeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := compare(tc.real, tc.sims, 0, 15)
			if a.OK != tc.ok {
				t.Errorf("OK = %v, want %v (%+v)", a.OK, tc.ok, a)
			}
			if !strings.Contains(a.Why, tc.why) || (tc.why == "") != (a.Why == "") {
				t.Errorf("Why = %q, want it to say %q", a.Why, tc.why)
			}
			if tc.by != "" && (len(a.Checks) == 0 || a.Checks[0].By != tc.by) {
				t.Errorf("checks = %+v, want the p50 agreeing by %q", a.Checks, tc.by)
			}
		})
	}
	// A percentile with fewer than 20 measured calls beyond it is reported, not judged: with
	// 2,700 calls the p99.9 (2.7 calls) may disagree, the p99 (27 calls) may not.
	few := pt(10, 200, 600)
	few.Calls = 2700
	if a := compare(few, ref, few.Calls, 15); !a.OK || a.Checks[2].By != "few calls" || a.Checks[2].Real == nil || *a.Checks[2].Real != 600 {
		t.Errorf("p99.9 on 2.7 calls: %+v, want it reported and not judged", a)
	} else if s := a.Checks[2].Sim; s.Median == nil || *s.Median != 290 || s.Min == nil || s.Max == nil {
		t.Errorf("p99.9 on 2.7 calls: simulated %+v, want the simulated figure reported beside it", s)
	} else if got := cell(a.Checks[2], 2); got != "600.0 / 290.0 (290.0–290.0)" {
		t.Errorf("report cell %q, want the real and simulated figures", got)
	}
	few.P99Ms = 300
	if a := compare(few, ref, few.Calls, 15); a.OK || !strings.Contains(a.Why, "p99_ms real 300.0") {
		t.Errorf("p99 on 27 calls: %+v, want it judged (and failing)", a)
	}
	enough := pt(10, 200, 600)
	enough.Calls = 20000
	if a := compare(enough, ref, enough.Calls, 15); a.OK || !strings.Contains(a.Why, "p999_ms real 600.0") {
		t.Errorf("p99.9 on 20 calls: %+v, want it judged (and failing)", a)
	}
	// A seed whose figure lands on a failure bounds the seeds' range from above for a real
	// figure as it does for a failed one: both agree by the spread, the real figure at
	// least the lowest seed's less the band.
	failedSeed := []sim.Point{pt(10, 200, 290), pt(10, 200, 290), pt(10, 200, sim.Failed)}
	for _, real := range []float64{600, sim.Failed} {
		if a := compare(pt(10, 200, real), failedSeed, 0, 15); !a.OK {
			t.Errorf("p99.9 %v against seeds 290, 290 and failed: %+v, want it to agree", real, a)
		}
	}
	if a := compare(pt(10, 200, 200), failedSeed, 0, 15); a.OK {
		t.Errorf("p99.9 200 against seeds 290, 290 and failed: %+v, want it to disagree (below the lowest less 15 %%)", a)
	}
	// The rule counts the measured calls, not the warm-up's: 21,000 calls are 18,900 measured,
	// 18.9 beyond the p99.9.
	warmed := pt(10, 200, 600)
	warmed.Calls = 21000
	if a := compare(warmed, ref, measuredCalls(warmed.Calls, 0.1), 15); !a.OK || a.Checks[2].By != "few calls" {
		t.Errorf("p99.9 on 18.9 of 21,000 calls: %+v, want it reported and not judged", a)
	}
	// The workers' utilisation is judged against the first seed's twin, which drew the real
	// servers' service times, within tightPct: a server 10 % slower than the model, or one
	// with 12 workers instead of 16, is outside it, though the other seeds (other draws)
	// spread as wide.
	util := func(p sim.Point, u float64) sim.Point { p.UtilisationPct = u; return p }
	seeds := []sim.Point{util(pt(10, 200, 290), 30), util(pt(10, 200, 290), 29), util(pt(10, 200, 290), 31.5)}
	for _, tc := range []struct {
		real float64
		ok   bool
	}{{30.2, true}, {31.4, true}, {28.6, true}, {32.5, false}, {27.8, false}, {40, false}} {
		a := compare(util(pt(10, 200, 290), tc.real), seeds, 0, 15)
		if a.OK != tc.ok || len(a.Checks) != 4 || a.Checks[3].Figure != "utilisation_pct" {
			t.Errorf("utilisation %.1f %% against the same draws' 30 %% (seeds 29–31.5 %%): %+v, want ok %v", tc.real, a, tc.ok)
		}
		if !tc.ok && !strings.Contains(a.Why, "utilisation real") {
			t.Errorf("utilisation %.1f %%: Why %q, want it to say so", tc.real, a.Why)
		}
	}
	if a := compare(pt(10, 200, 290), seeds, 0, 15); len(a.Checks) != 3 {
		t.Errorf("no real utilisation: %d checks, want the percentiles only", len(a.Checks))
	}
	// A figure that agrees only with the seeds' range says so.
	a := compare(pt(10, 80, 170), []sim.Point{pt(10, 26, 33), pt(10, 26, 33), pt(10, 90, 180), pt(10, 300, 400)}, 0, 15)
	if !a.OK || a.Checks[1].By != "spread" {
		t.Errorf("p99 80 against seeds 26, 26, 90, 300: %+v, want agreement by spread", a.Checks[1])
	}
}

// A percentile reported, not judged, for its few calls still has its difference from the
// simulated median: the report's diff column and diff_pct were blank though both figures
// were there.
func TestFewCallsKeepDiffPct(t *testing.T) {
	few := pt(10, 220, 580)
	few.Calls = 1000 // 900 measured: 9 calls beyond the p99, 0.9 beyond the p99.9
	a := compare(few, []sim.Point{pt(10, 200, 290)}, measuredCalls(few.Calls, 0.1), 15)
	for i, want := range map[int]float64{1: 10, 2: 100} {
		c := a.Checks[i]
		if c.By != "few calls" || c.DiffPct == nil || math.Abs(*c.DiffPct-want) > 1e-9 {
			t.Errorf("%s on few calls: by %q, diff_pct %v; want few calls and %+.0f %%", c.Figure, c.By, c.DiffPct, want)
		}
	}
	if a.Checks[0].DiffPct == nil || *a.Checks[0].DiffPct != 0 {
		t.Errorf("p50: diff_pct %v, want 0", a.Checks[0].DiffPct)
	}
	// A real figure on a failed call has no difference.
	if a := compare(pt(10, 200, sim.Failed), []sim.Point{pt(10, 200, 290)}, 900, 15); a.Checks[2].DiffPct != nil {
		t.Errorf("failed p99.9: diff_pct %v, want none", *a.Checks[2].DiffPct)
	}
}
