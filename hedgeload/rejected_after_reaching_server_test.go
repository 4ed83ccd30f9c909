package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/sim"
)

// retryRefusedErr is the error the library's core gives a call whose first attempt
// reached the server and failed, and whose retry the adaptive limit refused: an
// *hedge.AttemptsError whose Cause is ErrLimitExceeded.
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
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	a := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	a.Start(t0)
	a.AttemptDone(t0.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503 from the server")})
	b := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	b.Start(t0.Add(2 * time.Millisecond)) // holds the one permit when a's retry is due
	a.TimerFired(t0.Add(11 * time.Millisecond))
	var ae *hedge.AttemptsError
	if !a.Done() || !errors.As(a.Err(), &ae) || !errors.Is(a.Err(), hedge.ErrLimitExceeded) {
		t.Fatalf("call a: done %v, err %v; want an AttemptsError caused by ErrLimitExceeded", a.Done(), a.Err())
	}
	return a.Err()
}

// TestRejectedOnlyWhenNoAttemptReachedTheServer: report.md's and report.json's
// rejected_pct are the calls "refused before reaching the server"; a call whose attempt the
// server answered with a failure, and whose retry the limit then refused, reached it. The
// recorder counted it as rejected because errors.Is sees the AttemptsError's Cause.
func TestRejectedOnlyWhenNoAttemptReachedTheServer(t *testing.T) {
	retryRefused := retryRefusedErr(t)
	const calls = 10
	acct := newAccounts(calls, 0, calls, 1)
	cl := &caller{
		pc:   pointConfig{calls: calls, callTimeout: time.Second},
		ctx:  context.Background(),
		acct: acct, recs: make([]callRecord, calls), sup: map[string]int64{},
		firsts: make([]time.Duration, calls), stopPacer: func() {},
	}
	cl.clients = []loadClient{{call: func(ctx context.Context, i int) error {
		switch i {
		case 0:
			return hedge.ErrLimitExceeded // refused before anything was sent
		case 1:
			return retryRefused // reached the server, failed, retry refused
		}
		return nil
	}, close: func() {}}}
	cl.left.Store(calls)
	for i := range calls {
		cl.send(i, time.Now())
	}
	if !cl.recs[0].rejected || !cl.recs[0].failed {
		t.Errorf("call 0 (ErrLimitExceeded at once): failed %v, rejected %v; want both", cl.recs[0].failed, cl.recs[0].rejected)
	}
	if !cl.recs[1].failed || cl.recs[1].rejected {
		t.Errorf("call 1 (reached the server, retry refused: %v): failed %v, rejected %v; want failed, not rejected",
			retryRefused, cl.recs[1].failed, cl.recs[1].rejected)
	}
	var pt sim.Point
	var diag diagnostics
	cl.figures(&pt, &diag, nil)
	if pt.RejectedPct != 10 || pt.FailedPct != 20 {
		t.Errorf("rejected %v %%, failed %v %%; want 10 and 20", pt.RejectedPct, pt.FailedPct)
	}
}
