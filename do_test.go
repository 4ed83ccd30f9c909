package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

var noBudget = budget.Config{Off: true}

// slowPrimary answers after primary for attempt 0 and after others for every other attempt,
// honouring its context.
func slowPrimary(primary, others time.Duration) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		info, _ := hedge.AttemptFrom(ctx)
		d := others
		if info.Index == 0 {
			d = primary
		}
		select {
		case <-time.After(d):
			return fmt.Sprintf("attempt %d", info.Index), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func TestSlowPrimaryIsAnsweredByTheHedgeAtTheRightTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(40 * time.Millisecond), Budget: noBudget})
		var lg hedge.Log
		start := time.Now()
		v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, slowPrimary(time.Second, time.Millisecond))
		if err != nil || v != "attempt 1" {
			t.Fatalf("Do = %q, %v; want the hedge's answer", v, err)
		}
		if got := time.Since(start); got != 41*time.Millisecond {
			t.Errorf("answered after %v, want 41ms (hedge at 40ms + 1ms)", got)
		}
		if want := "2 attempts over 41ms: hedge OK (1ms), at 40ms, discarded (41ms)"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
		m := p.Measured()
		if m.HedgesStarted != 1 || m.HedgesWon != 1 || m.Calls != 1 {
			t.Errorf("Measured = %+v, want 1 call, 1 hedge started, 1 won", m)
		}
	})
}

func TestFastFailureDoesNotWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
		fail := errors.New("503")
		start := time.Now()
		v, err := hedge.Do(t.Context(), p, func(ctx context.Context) (string, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Hedge {
				time.Sleep(time.Millisecond)
				return "", fail // fast failure of the hedge
			}
			time.Sleep(100 * time.Millisecond)
			return "slow ok", nil
		})
		if err != nil || v != "slow ok" {
			t.Fatalf("Do = %q, %v; want the slow success, not the fast failure", v, err)
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("answered after %v, want 100ms", got)
		}
	})
}

func TestEveryAttemptFailedSaysWhatHappenedToEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Attempts: 3, Budget: noBudget})
		errs := []error{errors.New("first"), errors.New("second"), errors.New("third")}
		var n atomic.Int32
		var lg hedge.Log
		_, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, func(ctx context.Context) (int, error) {
			return 0, errs[n.Add(1)-1]
		})
		var ae *hedge.AttemptsError
		if !errors.As(err, &ae) || len(ae.Attempts) != 3 {
			t.Fatalf("err = %v; want an AttemptsError with 3 attempts", err)
		}
		for _, e := range errs {
			if !errors.Is(err, e) {
				t.Errorf("errors.Is(err, %v) = false", e)
			}
		}
		if !strings.Contains(err.Error(), "attempt 2: third") {
			t.Errorf("message %q does not say what happened to attempt 2", err)
		}
		if !strings.HasPrefix(lg.String(), "3 attempts over") || strings.Count(lg.String(), "retry failed") != 2 {
			t.Errorf("log = %q, want 3 attempts, two of them failed retries", lg.String())
		}
	})
}

func TestRetryWaitsForBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget,
			Backoff: hedge.Backoff{Initial: 50 * time.Millisecond, Jitter: -1}})
		var n atomic.Int32
		start := time.Now()
		v, err := hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
			if n.Add(1) == 1 {
				return 0, errors.New("transient")
			}
			return 7, nil
		})
		if err != nil || v != 7 {
			t.Fatalf("Do = %v, %v; want the retry's answer", v, err)
		}
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("retry answered after %v, want exactly the 50ms backoff", got)
		}
		if m := p.Measured(); m.Retries != 1 {
			t.Errorf("Retries = %d, want 1", m.Retries)
		}
	})
}

func TestPermanentFailureIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Attempts: 3, Budget: noBudget})
		var n atomic.Int32
		notFound := errors.New("not found")
		_, err := hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
			n.Add(1)
			return 0, hedge.MarkPermanent(notFound)
		})
		if !errors.Is(err, notFound) || n.Load() != 1 {
			t.Fatalf("err = %v after %d attempts; want not found after 1", err, n.Load())
		}
	})
}

func TestCallerCancellationReturnsPromptlyAndLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(25*time.Millisecond, cancel)
		var running atomic.Int32
		start := time.Now()
		_, err := hedge.Do(ctx, p, func(ctx context.Context) (int, error) {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 25*time.Millisecond {
			t.Errorf("returned after %v, want 25ms (at cancellation)", got)
		}
		synctest.Wait() // every attempt goroutine has exited or is durably blocked
		if n := running.Load(); n != 0 {
			t.Errorf("%d attempts still running after Do returned", n)
		}
		// synctest.Test fails the test if any goroutine of the bubble outlives it.
	})
}

func TestDeadlineReachesAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		var sawDeadline atomic.Bool
		_, err := hedge.Do(ctx, p, func(ctx context.Context) (int, error) {
			if _, ok := ctx.Deadline(); ok {
				sawDeadline.Store(true)
			}
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) || !sawDeadline.Load() {
			t.Fatalf("err = %v, saw deadline %v; want DeadlineExceeded and the deadline visible", err, sawDeadline.Load())
		}
	})
}

func TestPanicReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		defer func() {
			v := recover()
			pe, ok := v.(*hedge.PanicError)
			if !ok || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "do_test.go") {
				t.Fatalf("recovered %#v; want a *PanicError carrying \"boom\" and the attempt's stack", v)
			}
		}()
		hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
			panic("boom")
		})
		t.Fatal("Do returned instead of panicking")
	})
}

func TestNotRepeatableCallIsSentOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Attempts: 3, Budget: noBudget})
		var n atomic.Int32
		ctx := hedge.WithRepeatable(t.Context(), false)
		_, err := hedge.Do(ctx, p, func(ctx context.Context) (int, error) {
			n.Add(1)
			time.Sleep(50 * time.Millisecond)
			return 0, errors.New("failed")
		})
		if err == nil || n.Load() != 1 {
			t.Fatalf("attempts = %d, err = %v; want exactly 1 attempt and its error", n.Load(), err)
		}
		if got := p.Measured().Suppressed[hedge.ReasonNotRepeatable]; got != 1 {
			t.Errorf("suppressed(not repeatable) = %d, want 1", got)
		}
	})
}

func TestAtQuantileWarmsUpThenHedgesAtTheLiveQuantile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []hedge.Event
		var mu sync.Mutex
		// Calls one at a time: nothing overtakes anything, so the quantile alone decides
		// (MinimumInService off).
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.9, hedge.Adaptive{MinimumDelay: time.Millisecond, MinimumInService: hedge.Off}),
			Budget: noBudget,
			Observer: func(e hedge.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == hedge.HedgeStarted || e.Kind == hedge.HedgeSuppressed {
					events = append(events, e)
				}
			}})
		if m := p.Measured(); m.Warm {
			t.Fatal("a new policy says it is warm")
		}
		// 20 calls of 5ms each: the estimator warms up on the 20th.
		for i := range 20 {
			hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
				time.Sleep(5 * time.Millisecond)
				return i, nil
			})
		}
		m := p.Measured()
		if !m.Warm || m.Threshold < 4500*time.Microsecond || m.Threshold > 5500*time.Microsecond {
			t.Fatalf("after 20 samples of 5ms: threshold %v warm %v; want ~5ms", m.Threshold, m.Warm)
		}
		if m.Suppressed[hedge.ReasonCold] != 20 {
			t.Errorf("suppressed(cold) = %d, want 20 (one per call while cold)", m.Suppressed[hedge.ReasonCold])
		}
		start := time.Now()
		v, err := hedge.Do(t.Context(), p, slowPrimary(time.Second, time.Millisecond))
		if err != nil || v != "attempt 1" {
			t.Fatalf("Do = %q, %v", v, err)
		}
		if got := time.Since(start); got < m.Threshold || got > m.Threshold+2*time.Millisecond {
			t.Errorf("hedge answered after %v, want threshold %v + 1ms", got, m.Threshold)
		}
		last := events[len(events)-1]
		if last.Kind != hedge.HedgeStarted || last.Delay != m.Threshold {
			t.Errorf("last event %+v, want HedgeStarted with Delay %v", last, m.Threshold)
		}
	})
}

func TestBudgetBoundHoldsUnder64Goroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond)}) // default budget: 10% + 1/s over 10s
		const goroutines, calls = 64, 10
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range calls {
					hedge.Do(context.Background(), p, slowPrimary(50*time.Millisecond, 50*time.Millisecond))
				}
			})
		}
		wg.Wait()
		m := p.Measured()
		// Every call wanted a hedge; within one 10s window the budget funds
		// 0.10 × 640 calls + 1/s × 10s = 74 of them, and not one more.
		if m.HedgesStarted != 74 {
			t.Errorf("hedges started = %d, want exactly 74", m.HedgesStarted)
		}
		if got := m.HedgesStarted + m.Suppressed[hedge.ReasonBudget]; got != goroutines*calls {
			t.Errorf("hedges + budget suppressions = %d, want %d", got, goroutines*calls)
		}
	})
}

func TestDoDetachedKeepsTheWinnerAliveUntilRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		var discarded atomic.Int32
		var winnerCtx context.Context
		var mu sync.Mutex
		ctxs := map[int]context.Context{}
		v, hold, err := hedge.DoDetached(t.Context(), p, func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			mu.Lock()
			ctxs[info.Index] = ctx
			mu.Unlock()
			if info.Index == 0 {
				time.Sleep(30 * time.Millisecond) // ignores cancellation: answers anyway
				return 0, nil
			}
			time.Sleep(5 * time.Millisecond)
			return 1, nil
		}, func(v int, err error) { discarded.Add(1) })
		if err != nil || v != 1 {
			t.Fatalf("DoDetached = %v, %v", v, err)
		}
		winnerCtx = ctxs[1]
		if winnerCtx.Err() != nil {
			t.Fatal("the winner's context was cancelled before release")
		}
		if ctxs[0].Err() == nil {
			t.Fatal("the loser's context was not cancelled")
		}
		time.Sleep(50 * time.Millisecond) // the loser answers late
		if discarded.Load() != 1 {
			t.Errorf("discarded %d late answers, want 1", discarded.Load())
		}
		hold.Release()
		if winnerCtx.Err() == nil {
			t.Error("release did not cancel the winner's context")
		}
	})
}

func TestConcurrentDoSharesOnePolicy(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	baseline := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				v, err := hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) { return g*1000 + i, nil })
				if err != nil || v != g*1000+i {
					t.Errorf("Do = %v, %v", v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := p.Measured(); m.Calls != 1600 {
		t.Errorf("Calls = %d, want 1600", m.Calls)
	}
	// No goroutine of ours outlives its call.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Errorf("%d goroutines left", n)
	}
}

func TestDerivedContextsFollowTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		var derivedErr atomic.Value
		var ran, stopped atomic.Bool
		hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index == 1 {
				return 1, nil
			}
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			context.AfterFunc(ctx, func() { ran.Store(true) })
			stop := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
			stopped.Store(stop())
			<-child.Done() // the loser's cancellation reaches contexts derived from it
			derivedErr.Store(child.Err())
			return 0, child.Err()
		})
		synctest.Wait()
		if err, _ := derivedErr.Load().(error); !errors.Is(err, context.Canceled) {
			t.Errorf("derived context ended with %v, want context.Canceled", err)
		}
		if !ran.Load() || !stopped.Load() {
			t.Errorf("AfterFunc ran %v, stop reported %v; want both true", ran.Load(), stopped.Load())
		}
	})
}

// TestDoStartsEachAttemptOnce runs many calls with mixed latencies and failures through
// hedges, retries and timer re-arming, and checks that the attempt function ran exactly as
// often as the attempt log says, never more than Attempts, and that every call got an answer
// that one of its attempts gave.
func TestDoStartsEachAttemptOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(7 * time.Millisecond), Attempts: 3, MaximumConcurrent: 2,
			Budget: noBudget, Backoff: hedge.Backoff{Initial: 3 * time.Millisecond}})
		var wg sync.WaitGroup
		const calls = 200
		var runs [calls]atomic.Int32
		var logs [calls]hedge.Log
		for i := range calls {
			wg.Go(func() {
				v, err := hedge.Do(hedge.WithLog(context.Background(), &logs[i]), p, func(ctx context.Context) (int, error) {
					info, _ := hedge.AttemptFrom(ctx)
					runs[i].Add(1)
					d := time.Duration((i*7+info.Index*13)%20) * time.Millisecond
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return 0, ctx.Err()
					}
					if (i+info.Index)%4 == 0 {
						return 0, errors.New("failed")
					}
					return 100 + info.Index, nil
				})
				if err == nil && (v < 100 || v > 102) {
					t.Errorf("call %d: answer %d is no attempt's", i, v)
				}
			})
		}
		wg.Wait()
		synctest.Wait() // attempts started just before their call ended have now run
		for i := range calls {
			if n := int(runs[i].Load()); n != len(logs[i].Attempts) || n > 3 || n == 0 {
				t.Errorf("call %d: attempt function ran %d times, log has %d attempts: %s", i, n, len(logs[i].Attempts), logs[i])
			}
		}
	})
}

func TestPanicInAnAbandonedLoserIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		var panicked atomic.Bool
		v, err := hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) {
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				return 1, nil
			}
			time.Sleep(50 * time.Millisecond) // ignores its context, then panics
			panicked.Store(true)
			panic("late")
		})
		if err != nil || v != 1 {
			t.Fatalf("Do = %v, %v; want the hedge's answer", v, err)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if !panicked.Load() {
			t.Fatal("the loser never ran to its panic")
		}
		// Reaching this line means the panic did not crash the test binary.
	})
}

// A context already done when the call begins sends nothing, through every entry point: the
// caller's error at once, no attempt, no event, nothing counted.
func TestContextDoneBeforeTheCallSendsNothing(t *testing.T) {
	var events atomic.Int64
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Millisecond), Budget: noBudget,
		Observer: func(hedge.Event) { events.Add(1) }})
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the caller left")
	cancel(cause)
	var sent atomic.Int64
	fn := func(context.Context) (int, error) { sent.Add(1); return 1, nil }
	discard := func(int, error) { t.Error("discard called for a call never sent") }
	for name, call := range map[string]func() error{
		"Do":       func() error { _, err := hedge.Do(ctx, p, fn); return err },
		"DoInline": func() error { _, err := hedge.DoInline(ctx, p, fn); return err },
		"DoDetached": func() error {
			_, hold, err := hedge.DoDetached(ctx, p, fn, discard)
			hold.Release()
			return err
		},
		"DoInlineDetached": func() error {
			_, hold, err := hedge.DoInlineDetached(ctx, p, fn, discard)
			hold.Release()
			return err
		},
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d attempts sent on a done context, want 0", n)
	}
	if n := events.Load(); n != 0 {
		t.Errorf("%d events for calls never sent, want 0", n)
	}
	if m := p.Measured(); m.Calls != 0 || m.InFlight != 0 {
		t.Errorf("Measured = %d calls, %d in flight; want none", m.Calls, m.InFlight)
	}
}
