package sim

import (
	"context"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestLateAnswerDroppedCountsAsWasted: wasted work is the server time spent on attempts whose
// answer was discarded. With a busy client (Params.ClientDelay) an answer the server gave can
// reach the call's state machine after another attempt has won; that answer is discarded too,
// so its service time is wasted. Whatever the cancellation mode, the server time that was not
// wasted is exactly the service time of the attempts that won.
func TestLateAnswerDroppedCountsAsWasted(t *testing.T) {
	f, err := FamilyByName(FamilyBusyClient)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Params{Calls: 20_000}.withModel(f.Params).resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{Ignored, Reaches} {
		checkKeptIsWinners(t, p, mode)
	}
}

func checkKeptIsWinners(t *testing.T, p Params, mode string) {
	t.Helper()
	r := newRunner()
	svc := map[[2]int]int64{} // (call, attempt) → service time
	r.s.onStart = func(call, attempt, replica int, d int64, ejected bool) {
		svc[[2]int{call, attempt}] = d
	}
	var used int64 // service time of the winning attempts of measured calls
	r.s.onEvent = func(call int, e hedge.Event) {
		if e.Kind == hedge.CallFinished && e.Err == nil && e.Attempt >= 0 {
			used += svc[[2]int{call, e.Attempt}]
		}
	}
	// A hedge after 20 ms with no budget: a primary that takes a little over 20 ms and its
	// hedge often answer a few ms apart, and a busy client's delays can reverse them.
	su := Setup{}
	for _, s := range Setups(0) {
		if s.Name == SetupNoBudget {
			su = s
		}
	}
	pt, err := r.run(context.Background(), p, su, 30, mode, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Collapse || pt.FailedPct != 0 {
		t.Fatalf("%s: collapse %v, failed %.2f %%", mode, pt.Collapse, pt.FailedPct)
	}
	if kept := r.s.serverNs - r.s.wastedNs; kept != used {
		t.Errorf("%s: server time not wasted %v, but the winners' service time is %v: %v of discarded answers counted as used (wasted work %.3f %%)",
			mode, time.Duration(kept), time.Duration(used), time.Duration(kept-used), pt.WastedWorkPct)
	}
}
