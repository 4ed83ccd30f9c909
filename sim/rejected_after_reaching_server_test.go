package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
)

// retryRefusedErr is the error the library's own core gives a call whose first attempt
// reached the server and failed, and whose retry the adaptive limit then refused: an
// *hedge.AttemptsError with ErrLimitExceeded as its Cause.
func retryRefusedErr(t *testing.T) error {
	t.Helper()
	p, err := hedge.New(hedge.Config{
		Attempts: 2,
		Limit:    &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1},
		Budget:   budget.Config{Off: true},
		Backoff:  hedge.Backoff{Initial: 10 * time.Millisecond, Jitter: hedge.Off},
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := vtime(0)
	a := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	a.Start(t0)
	a.AttemptDone(t0.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503 from the server")})
	b := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	b.Start(t0.Add(2 * time.Millisecond)) // holds the one permit when a's retry is due
	a.TimerFired(t0.Add(11 * time.Millisecond))
	if !a.Done() || a.Err() == nil {
		t.Fatalf("call a: done %v, err %v; want its retry refused", a.Done(), a.Err())
	}
	var ae *hedge.AttemptsError
	if !errors.As(a.Err(), &ae) || !errors.Is(a.Err(), hedge.ErrLimitExceeded) {
		t.Fatalf("call a's error %v: want an AttemptsError caused by ErrLimitExceeded", a.Err())
	}
	return a.Err()
}

// reachedThenRefusedClient sends every call to the server; every 100th call's answer is a
// failure whose retry the limit refused (the error retryRefusedErr shows the core returns).
type reachedThenRefusedClient struct{ err error }

func (c reachedThenRefusedClient) arrive(s *sim, sl int32)       { s.startAttempt(sl, 0) }
func (reachedThenRefusedClient) started(s *sim, sl int32, k int) {}
func (c reachedThenRefusedClient) done(s *sim, sl int32, k int) {
	if s.slots[sl].idx%100 == 0 {
		s.finish(sl, c.err)
		return
	}
	s.finish(sl, nil)
}
func (reachedThenRefusedClient) timer(s *sim, sl int32)                     {}
func (reachedThenRefusedClient) refused(s *sim, sl int32, k int)            {}
func (reachedThenRefusedClient) load(s *sim, c int32, rp int, l hedge.Load) {}
func (reachedThenRefusedClient) deadline(s *sim, sl int32)                  {}

// TestRejectedPctCountsOnlyCallsThatNeverReachedTheServer: RejectedPct is "calls refused
// before reaching the server" (run.go, result.go); a call whose attempt reached the server
// and failed, and whose retry the limit then refused, did reach it: it is failed, not
// rejected (hedgeotel counts it "error", not "rejected", for the same reason).
func TestRejectedPctCountsOnlyCallsThatNeverReachedTheServer(t *testing.T) {
	err := retryRefusedErr(t)
	d := Exponential{MeanTime: 10 * time.Millisecond}
	s := newSim()
	calls := 20000
	s.reset(runParams{
		workers: 4, dist: d, calls: calls, warm: calls / 10, maxQueue: 8000, maxEvents: 1e7,
		lambda: 0.5 * 4 / d.Mean().Seconds(), seed: 1,
	}, reachedThenRefusedClient{err: err})
	s.run(nil)
	var p Point
	s.measure(&p)
	if p.FailedPct < 0.9 || p.FailedPct > 1.1 {
		t.Fatalf("failed %v %%, want 1", p.FailedPct)
	}
	if p.RejectedPct != 0 {
		t.Errorf("rejected %v %% (failed %v %%): every failed call reached the server, want 0 rejected", p.RejectedPct, p.FailedPct)
	}
}
