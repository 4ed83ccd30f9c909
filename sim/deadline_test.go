package sim

import (
	"testing"
	"time"
)

// TestDeadlineReachesTheStateMachine: with a caller's deadline (Params.Timeout), every call's
// state machine is told it, as Do is by its context. With 30 ms to go on the reference model
// (the p95 of latency is about 16 ms, and a hedge must wait for evidence that its call is in
// service), the deadline-aware setup refuses the hedges that could no longer answer in time
// (no_time_left), brings the others forward, and misses fewer deadlines than the recommended
// default, which refuses only those left less than the median while hedges are not found
// winning; both miss fewer than no hedge. Common random numbers: the
// same seed gives every setup the same arrivals and service times.
func TestDeadlineReachesTheStateMachine(t *testing.T) {
	p := Params{Calls: scaled(100_000), Timeout: 30 * time.Millisecond}
	nh := mustRun(t, p, SetupNoHedge, 30, Ignored, 1)
	rec := mustRun(t, p, SetupRecommended, 30, Ignored, 1)
	da := mustRun(t, p, SetupDeadlineAware, 30, Ignored, 1)
	t.Logf("failed: no hedge %.3f %%, recommended %.3f %%, deadline-aware %.3f %% (suppressed %v)", nh.FailedPct, rec.FailedPct, da.FailedPct, da.Suppressed)
	if da.Suppressed["no_time_left"] == 0 {
		t.Errorf("no_time_left: deadline-aware %d; want some", da.Suppressed["no_time_left"])
	}
	if !(da.FailedPct < rec.FailedPct && rec.FailedPct < nh.FailedPct) {
		t.Errorf("failed calls: deadline-aware %.3f %%, recommended %.3f %%, no hedge %.3f %%; want them in that order", da.FailedPct, rec.FailedPct, nh.FailedPct)
	}
	// Without a deadline the setting has nothing to read: the run is recommended's, exactly.
	free := Params{Calls: scaled(20_000)}
	a, b := mustRun(t, free, SetupRecommended, 50, Reaches, 2), mustRun(t, free, SetupDeadlineAware, 50, Reaches, 2)
	if b.Setup = a.Setup; !equalPoints(a, b) {
		t.Errorf("without a deadline:\nrecommended    %+v\ndeadline-aware %+v", a, b)
	}
}
