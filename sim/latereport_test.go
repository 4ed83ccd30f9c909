package sim

import (
	"testing"
	"time"
)

// reportSpy is the engine's client with a check on every answer it is handed: the load report
// that goes with it to the policy (s.report, s.reportFrom) must be its own response's, from
// the replica that served it, with the wait that response's request had.
type reportSpy struct {
	*hedgeClient
	replica        map[[2]int]int   // (call, attempt) → its replica (onStart)
	wait           map[[2]int]int64 // (call, attempt) → its queue wait (onService)
	checked, wrong int
}

func (c *reportSpy) done(s *sim, si int32, k int) {
	key := [2]int{s.slots[si].idx, k}
	if w, ok := c.wait[key]; ok {
		c.checked++
		if s.report.Wait != time.Duration(w) || s.reportFrom != c.replica[key] {
			c.wrong++
		}
	}
	c.hedgeClient.done(s, si, k)
}

// A busy client gets to some answers late (busy-client: ~6 ms, 5 s in every 10), when other
// responses have come back since. The load report it hands its policy with a late answer is
// still that answer's own, not the latest response's, from whichever replica and call.
func TestLateAnswerCarriesItsOwnLoadReport(t *testing.T) {
	setup := setupNamed(t, SetupServerAssisted)
	for _, fam := range []string{FamilyReference, FamilyBusyClient} {
		f, err := FamilyByName(fam)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Params{Calls: 5000, Replicas: 4, Workers: 4}.withModel(f.Params).resolve()
		if err != nil {
			t.Fatal(err)
		}
		r := newRunner()
		var spy *reportSpy
		r.wrap = func(hc *hedgeClient) client {
			spy = &reportSpy{hedgeClient: hc, replica: map[[2]int]int{}, wait: map[[2]int]int64{}}
			return spy
		}
		r.s.onStart = func(call, attempt, rp int, _ int64, _ bool) { spy.replica[[2]int{call, attempt}] = rp }
		r.s.onService = func(call, attempt int, wait, _ int64) { spy.wait[[2]int{call, attempt}] = wait }
		if _, err := r.run(t.Context(), p, setup, 70, Ignored, 1); err != nil {
			t.Fatal(err)
		}
		if spy.checked < 1000 {
			t.Fatalf("%s: only %d answers checked", fam, spy.checked)
		}
		if spy.wrong > 0 {
			t.Errorf("%s: %d of %d answers handed the policy another response's load report", fam, spy.wrong, spy.checked)
		}
	}
}
