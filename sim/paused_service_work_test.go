package sim

import (
	"context"
	"testing"
	"time"
)

// TestCancelledDuringPauseCountsOnlyWorkDone: with cancellation reaching the server, a request
// cancelled in service counts as server time (and wasted work) only the work its worker did on
// it. A stop-the-world pause does no work, so a request that was in service across a pause and
// is then cancelled must not count the pause: the server time of the measured attempts can
// never exceed the service times they drew.
//
// Every request here needs 20 ms of work; the replica stops for 40 ms every 100 ms; each call
// gives up 50 ms after it arrives. A request that starts just before a pause is still in
// service at its deadline, 50 ms of wall time later, having done under 20 ms of work.
func TestCancelledDuringPauseCountsOnlyWorkDone(t *testing.T) {
	p, err := Params{
		Workers: 2,
		Service: Uniform{Min: 20 * time.Millisecond, Max: 20 * time.Millisecond},
		Calls:   5000,
		Pauses:  Pauses{Every: 100 * time.Millisecond, Length: 40 * time.Millisecond},
		Timeout: 50 * time.Millisecond,
	}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner()
	warm := int(p.WarmupFraction * float64(p.Calls))
	var drawn int64 // service time drawn by the attempts of measured calls, ns
	r.s.onStart = func(call, attempt, replica int, svc int64, ejected bool) {
		if call >= warm && call < p.Calls {
			drawn += svc
		}
	}
	pt, err := r.run(context.Background(), p, Setup{Name: SetupNoHedge}, 40, Reaches, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Collapse || pt.FailedPct == 0 {
		t.Fatalf("the scenario must run and cut some calls short: collapse %v, failed %.2f %%", pt.Collapse, pt.FailedPct)
	}
	if got := r.s.serverNs; got > drawn {
		t.Errorf("server time of measured attempts %v, more than the %v of service they drew: pauses counted as work (wasted work %.2f %%)",
			time.Duration(got), time.Duration(drawn), pt.WastedWorkPct)
	}
}
