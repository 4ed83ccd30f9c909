package sim_test

import (
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestJudgeWhyTellsFailedSharesApart: a point fails the hold rule when it fails more calls
// than no hedge, by as little as one call (0.00056 % of the reference run's 180,000 measured
// calls). Its why, which scorecard.md and scorecard.html show, printed both shares to three
// decimals: 2 failed calls against 1 read "0.001 % > no hedge's 0.001 %", a reason that
// contradicts itself.
func TestJudgeWhyTellsFailedSharesApart(t *testing.T) {
	const measured = 180000
	hedged := sim.Point{P99Ms: 20, P999Ms: 30, FailedPct: 100 * 2.0 / measured}
	noHedge := sim.Point{P99Ms: 20, P999Ms: 30, FailedPct: 100 * 1.0 / measured}
	holds, why := sim.Judge(hedged, noHedge)
	if holds {
		t.Fatal("a point that fails more calls than no hedge holds")
	}
	var a, b string
	rest, ok := strings.CutPrefix(why, "failed calls ")
	if ok {
		a, rest, ok = strings.Cut(rest, " % > no hedge's ")
	}
	if ok {
		b, ok = strings.CutSuffix(rest, " %")
	}
	if !ok {
		t.Fatalf("why = %q, want \"failed calls X %% > no hedge's Y %%\"", why)
	}
	if a == b {
		t.Errorf("why = %q: the two shares read the same though %v > %v", why, hedged.FailedPct, noHedge.FailedPct)
	}
}
