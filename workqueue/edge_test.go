package workqueue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Load.QPS is "the rate of admissions over the last second or so". After a quiet spell,
// a server admitting 100 requests a second must not report a rate near 0 for its whole
// first second back.
func TestQPSAfterIdleSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 4})
		serve := func(d time.Duration) (last Load) {
			for el := time.Duration(0); el < d; el += 10 * time.Millisecond {
				time.Sleep(10 * time.Millisecond)
				q.Acquire(context.Background(), false)
				last = q.Load(0)
				q.Release(false)
			}
			return last
		}
		serve(5 * time.Second)  // 100/s
		time.Sleep(time.Minute) // idle: no request, no report
		l := serve(900 * time.Millisecond)
		if l.QPS < 50 {
			t.Errorf("QPS = %.3f after 0.9s of 100 admissions/s following an idle minute, want about 100", l.QPS)
		}
	})
}

// A first attempt whose context is already done cannot run: it must not push a live hedged
// waiter out of a full list only to abandon its own place at once.
func TestDeadRequestEvictsHedgedWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 1, HedgedLast: true})
		q.Acquire(context.Background(), false) // the worker is busy
		release := make(chan struct{})
		hedge := acquireAsync(context.Background(), q, true, release) // waits in the hedged lane
		dead, cancel := context.WithCancel(context.Background())
		cancel()
		if a := q.Acquire(dead, false); a.Outcome != Abandoned && a.Outcome != Rejected {
			t.Fatalf("dead first attempt: %v, want abandoned or rejected", a.Outcome)
		}
		q.Release(false)
		close(release)
		synctest.Wait()
		if a := <-hedge; a.Outcome != Admitted {
			t.Errorf("hedged waiter: %v, want admitted (the worker came free and nobody else wanted it); Stats=%+v", a.Outcome, q.Stats())
		}
	})
}

// A request whose client has gone already does not take a free worker: its handler would
// run for nobody, and on a busy server (where a hedge's loser is cancelled as it arrives)
// that is work taken from the requests still waited for.
func TestGoneRequestDoesNotTakeAFreeWorker(t *testing.T) {
	q := mustNew(t, Config{Workers: 2, Queue: 4})
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	if a := q.Acquire(dead, false); a.Outcome != Abandoned {
		t.Fatalf("gone request at a free worker: %v, want abandoned", a.Outcome)
	}
	if s := q.Stats(); s.Running != 0 || s.Abandoned != 1 || s.Admitted != 0 {
		t.Errorf("Stats = %+v, want nothing running, 1 abandoned, none admitted", s)
	}
	if a := q.Acquire(context.Background(), false); a.Outcome != Admitted {
		t.Errorf("live request after it: %v, want admitted", a.Outcome)
	}
}
