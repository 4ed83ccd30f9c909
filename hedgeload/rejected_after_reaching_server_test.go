package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/sim"
)

// retryRefused is the error the core gives a call whose first attempt reached the server and
// failed, and whose retry the adaptive limit refused (sim's tests check that the core returns
// this shape): an *hedge.AttemptsError whose Cause is ErrLimitExceeded.
func retryRefused() error {
	served := errors.New("503 from the server")
	return &hedge.AttemptsError{Attempts: []error{served}, Err: served, Cause: hedge.ErrLimitExceeded}
}

// TestRejectedOnlyWhenNoAttemptReachedTheServer: report.md's and report.json's
// rejected_pct are the calls "refused before reaching the server"; a call whose attempt the
// server answered with a failure, and whose retry the limit then refused, reached it. The
// recorder counted it as rejected because errors.Is sees the AttemptsError's Cause.
func TestRejectedOnlyWhenNoAttemptReachedTheServer(t *testing.T) {
	retryRefused := retryRefused()
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
	cl.figures(&pt, &diag)
	if pt.RejectedPct != 10 || pt.FailedPct != 20 {
		t.Errorf("rejected %v %%, failed %v %%; want 10 and 20", pt.RejectedPct, pt.FailedPct)
	}
}
