package main

import (
	"context"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// report.json's real mean_wait_ms is the simulator's figure under the simulator's name: the
// mean queue wait of the measured calls' attempts. It was the queues' own mean over every
// request they admitted, the warm-up's (which meet the emptiest queues, or a start-up burst)
// and those sent after the measured calls included.
func TestMeanWaitOverTheMeasuredCalls(t *testing.T) {
	const total, warm, calls = 8, 2, 6 // calls 2-5 are measured
	acct := newAccounts(total, warm, calls, 1)
	cl := &caller{
		pc:   pointConfig{calls: calls, warmup: 0.25, callTimeout: time.Second, service: sim.Exponential{MeanTime: time.Millisecond}},
		warm: warm, ctx: context.Background(),
		acct: acct, recs: make([]callRecord, total), sup: map[string]int64{},
		firsts: make([]time.Duration, total), stopPacer: func() {},
	}
	cl.clients = []loadClient{{call: func(context.Context, int) error { return nil }, close: func() {}}}
	cl.left.Store(calls - warm)
	var waited time.Duration
	for i := range total {
		cl.send(i, time.Now())
		wait := time.Millisecond // the measured calls'
		if i < warm || i >= calls {
			wait = 100 * time.Millisecond
		}
		waited += wait
		k := i * maxAttempts
		acct.arrivedAt[k].Store(int64(time.Second) + int64(i)*int64(time.Second))
		acct.startedAt[k].Store(acct.arrivedAt[k].Load() + int64(wait))
	}
	var pt sim.Point
	var diag diagnostics
	cl.figures(&pt, &diag)
	if pt.MeanWaitMs != 1 {
		t.Errorf("mean wait %v ms, want 1 (the measured calls'; every request's is %v)", pt.MeanWaitMs, float64(waited)/total/1e6)
	}
}
