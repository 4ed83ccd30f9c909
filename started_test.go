package hedge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

// TestStartedServiceCancelsTiedCopies: with Tied, a first copy still queued after TieDelay
// (1ms) gets a tied copy; the one whose server reports that it started cancels the other,
// still queued, at that moment.
func TestStartedServiceCancelsTiedCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		var lg hedge.Log
		start := time.Now()
		v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
			hedgetest.Answer[string]{Stuck: true}, // queued behind others: never starts
			hedgetest.Answer[string]{Starts: true, StartAfter: 2 * time.Millisecond, After: 10 * time.Millisecond, Value: "copy"},
		))
		if err != nil || v != "copy" || time.Since(start) != 11*time.Millisecond {
			t.Fatalf("Do = %q, %v after %v; want the copy's answer after 11ms", v, err, time.Since(start))
		}
		// The queued primary was cancelled when the copy started, at 3ms, not when it won.
		if want := "2 attempts over 11ms: discarded (3ms), hedge OK (10ms), at 1ms"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
	})
}

// TestStartedServiceWithoutSignalKeepsBothCopies: a server that never reports a start leaves
// Tied copies racing, the tie sent after TieDelay: the first answer wins.
func TestStartedServiceWithoutSignalKeepsBothCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		var lg hedge.Log
		v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
			hedgetest.Answer[string]{After: 7 * time.Millisecond, Value: "primary"},
			hedgetest.Answer[string]{After: 10 * time.Millisecond, Value: "copy"},
		))
		if err != nil || v != "primary" {
			t.Fatalf("Do = %q, %v; want the primary's answer", v, err)
		}
		if want := "2 attempts over 7ms: OK (7ms), hedge discarded (6ms), at 1ms"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
	})
}

// TestStartedServiceIsIdempotentAndNeverBlocks: an attempt may report its start many times,
// from other goroutines, after it answered or after the call returned: only the first report
// counts, and nothing blocks or races.
func TestStartedServiceIsIdempotentAndNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: noBudget, Attempts: 3, MaximumConcurrent: 3})
		var lg hedge.Log
		var late []context.Context
		v, hold, err := hedge.DoDetached(hedge.WithLog(t.Context(), &lg), p, func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index != 2 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			// A transport reports from its own goroutine, and may do it more than once.
			rctx, cancel := context.WithCancel(ctx) // a context derived from the attempt's
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 10 {
					hedge.StartedService(rctx)
				}
			}()
			<-done
			hedge.StartedService(ctx)
			time.Sleep(time.Millisecond)
			late = append(late, ctx)
			return 2, nil
		}, nil)
		if err != nil || v != 2 {
			t.Fatalf("Do = %v, %v", v, err)
		}
		if want := "3 attempts over 1ms: discarded (0s), hedge discarded (0s), hedge OK (1ms)"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
		// After the call: the winner's context is still alive, and a report is a no-op.
		for range 5 {
			hedge.StartedService(late[0])
		}
		hold.Release()
		hedge.StartedService(late[0])
	})
}

// TestStartedServiceOutsideAnAttemptDoesNothing: no attempt, no effect, no allocation.
func TestStartedServiceOutsideAnAttemptDoesNothing(t *testing.T) {
	ctx := context.WithValue(context.Background(), struct{}{}, 1)
	if n := testing.AllocsPerRun(100, func() { hedge.StartedService(ctx) }); n != 0 {
		t.Errorf("StartedService outside an attempt allocates %v times, want 0", n)
	}
	hedge.StartedService(context.Background())
}

// TestStartedServiceAllocatesNothing: reporting a start costs no allocation, and a report
// on an attempt that has already reported costs none either.
func TestStartedServiceAllocatesNothing(t *testing.T) {
	p := hedge.MustNew(hedge.Config{})
	var allocs float64
	_, err := hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) {
		allocs = testing.AllocsPerRun(100, func() { hedge.StartedService(ctx) })
		return 0, nil
	})
	if err != nil || allocs != 0 {
		t.Errorf("StartedService in an attempt: %v allocations (err %v), want 0", allocs, err)
	}
}

// TestStartedServiceWithAQuantileTriggerChangesNothing: for triggers that do not read the
// signal, a call that reports starts hedges exactly as one that does not.
func TestStartedServiceWithAQuantileTriggerChangesNothing(t *testing.T) {
	for _, starts := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
			var lg hedge.Log
			var hedges atomic.Int32
			v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, func(ctx context.Context) (string, error) {
				if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
					hedges.Add(1)
				}
				return hedgetest.Script(
					hedgetest.Answer[string]{Starts: starts, After: 100 * time.Millisecond, Value: "primary"},
					hedgetest.Answer[string]{Starts: starts, After: 5 * time.Millisecond, Value: "hedge"},
				)(ctx)
			})
			if err != nil || v != "hedge" || hedges.Load() != 1 {
				t.Fatalf("starts=%v: Do = %q, %v with %d hedges; want the hedge's answer", starts, v, err, hedges.Load())
			}
			if want := "2 attempts over 25ms: hedge OK (5ms), at 20ms, discarded (25ms)"; lg.String() != want {
				t.Errorf("starts=%v: log = %q, want %q", starts, lg.String(), want)
			}
		})
	}
}

// TestTriggerReadsStartSignals: only triggers that decide from start signals make a transport
// ask servers for them.
func TestTriggerReadsStartSignals(t *testing.T) {
	for _, c := range []struct {
		t    hedge.Trigger
		want bool
	}{{hedge.Trigger{}, false}, {hedge.AtQuantile(0.95), false}, {hedge.After(time.Millisecond), false}, {hedge.Tied(), true}} {
		if got := c.t.ReadsStartSignals(); got != c.want {
			t.Errorf("%s.ReadsStartSignals() = %v, want %v", c.t, got, c.want)
		}
	}
}
