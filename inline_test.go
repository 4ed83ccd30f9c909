package hedge_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
	"github.com/hedgekit/hedge/limit"
)

// goid is the id of the calling goroutine, read from runtime.Stack.
func goid() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	// "goroutine 123 [running]:..."
	s := string(buf[:n])
	for i := len("goroutine "); i < len(s); i++ {
		if s[i] == ' ' {
			return s[len("goroutine "):i]
		}
	}
	return s
}

func TestDoInlineRunsTheFirstAttemptOnTheCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		caller := goid()
		var where [2]string
		v, err := hedge.DoInline(t.Context(), p, func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			where[info.Index] = goid()
			if info.Index == 0 {
				<-ctx.Done() // the hedge wins
				return 0, ctx.Err()
			}
			return 7, nil
		})
		if err != nil || v != 7 {
			t.Fatalf("DoInline = %v, %v; want the hedge's 7", v, err)
		}
		if where[0] != caller {
			t.Errorf("first attempt ran on goroutine %s, want the caller's %s", where[0], caller)
		}
		if where[1] == caller || where[1] == "" {
			t.Errorf("hedge ran on goroutine %q, want one of its own", where[1])
		}
	})
}

func TestDoInlineHedgesWhileTheFirstAttemptBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(40 * time.Millisecond), Budget: noBudget})
		var lg hedge.Log
		start := time.Now()
		v, err := hedge.DoInline(hedge.WithLog(t.Context(), &lg), p, slowPrimary(time.Second, time.Millisecond))
		if err != nil || v != "attempt 1" {
			t.Fatalf("DoInline = %q, %v; want the hedge's answer", v, err)
		}
		if got := time.Since(start); got != 41*time.Millisecond {
			t.Errorf("answered after %v, want 41ms (hedge at 40ms + 1ms; the first attempt honours its context)", got)
		}
		if want := "2 attempts over 41ms: hedge OK (1ms), at 40ms, discarded (41ms)"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
		if m := p.Measured(); m.HedgesStarted != 1 || m.HedgesWon != 1 || m.Calls != 1 || m.InFlight != 0 {
			t.Errorf("Measured = %+v, want 1 call, 1 hedge started and won, nothing in flight", m)
		}
	})
}

func TestDoInlineFirstAttemptWinsWithoutTimerOrHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(40 * time.Millisecond), Budget: noBudget})
		var lg hedge.Log
		v, err := hedge.DoInline(hedge.WithLog(t.Context(), &lg), p, slowPrimary(10*time.Millisecond, time.Millisecond))
		if err != nil || v != "attempt 0" {
			t.Fatalf("DoInline = %q, %v; want the first attempt's answer", v, err)
		}
		if want := "1 attempt over 10ms: OK (10ms)"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
		time.Sleep(time.Second) // a timer left armed would fire and start a hedge now
		if m := p.Measured(); m.HedgesStarted != 0 {
			t.Errorf("HedgesStarted = %d, want 0", m.HedgesStarted)
		}
	})
}

func TestDoInlineRetriesAfterTheFirstAttemptFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget,
			Backoff: hedge.Backoff{Initial: 50 * time.Millisecond, Jitter: -1}})
		var calls atomic.Int32
		start := time.Now()
		v, err := hedge.DoInline(t.Context(), p, func(ctx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				return 0, errors.New("503")
			}
			return 2, nil
		})
		if err != nil || v != 2 || calls.Load() != 2 {
			t.Fatalf("DoInline = %v, %v after %d calls; want the retry's 2 after 2", v, err, calls.Load())
		}
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("retry answered after %v, want exactly the 50ms backoff", got)
		}
	})
}

func TestDoInlineCancellationEndsTheFirstAttemptAndLeavesNothingBehind(t *testing.T) {
	for _, trigger := range []hedge.Trigger{{}, hedge.After(10 * time.Millisecond)} {
		synctest.Test(t, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: trigger, Budget: noBudget})
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(25*time.Millisecond, cancel)
			var running, started atomic.Int32
			start := time.Now()
			_, err := hedge.DoInline(ctx, p, func(ctx context.Context) (int, error) {
				started.Add(1)
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
			want := int32(1)
			if trigger != (hedge.Trigger{}) {
				want = 2
			}
			if n := started.Load(); n != want {
				t.Errorf("%d attempts started, want %d", n, want)
			}
			synctest.Wait()
			if n := running.Load(); n != 0 {
				t.Errorf("%d attempts still running after DoInline returned", n)
			}
			if m := p.Measured(); m.InFlight != 0 {
				t.Errorf("InFlight = %d, want 0", m.InFlight)
			}
		})
	}
}

func TestDoInlineWaitsForAFirstAttemptThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		start := time.Now()
		v, err := hedge.DoInline(t.Context(), p, func(ctx context.Context) (int, error) {
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				return 1, nil
			}
			time.Sleep(50 * time.Millisecond) // ignores its context
			return 0, nil
		})
		if err != nil || v != 1 {
			t.Fatalf("DoInline = %v, %v; want the hedge's answer", v, err)
		}
		// The documented price: the hedge won at 10ms, but the caller's goroutine was busy.
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("returned after %v, want 50ms (when the first attempt returned)", got)
		}
	})
}

func TestDoInlinePanicInTheFirstAttemptReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
			Limit: &limit.Config{InitialLimit: 4, MinLimit: 1, MaxLimit: 4}})
		for _, after := range []time.Duration{0, 30 * time.Millisecond} { // before and after the hedge started
			var running atomic.Int32
			pe := recoverPanicError(t, func() {
				hedge.DoInline(t.Context(), p, func(ctx context.Context) (int, error) {
					if info, _ := hedge.AttemptFrom(ctx); info.Index == 0 {
						time.Sleep(after)
						panic("boom")
					}
					return blocking(&running)(ctx)
				})
			})
			if pe.Value != "boom" || pe.Where != "attempt" {
				t.Errorf("after %v: PanicError = %+v, want the first attempt's boom", after, pe)
			}
			synctest.Wait()
			if n := running.Load(); n != 0 {
				t.Errorf("after %v: %d hedges still running", after, n)
			}
			if m := p.Measured(); m.InFlight != 0 {
				t.Errorf("after %v: InFlight = %d, want 0", after, m.InFlight)
			}
		}
	})
}

func TestDoInlinePanicInAHedgeReachesTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		var running atomic.Int32
		pe := recoverPanicError(t, func() {
			hedge.DoInline(t.Context(), p, func(ctx context.Context) (int, error) {
				if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
					panic("hedge boom")
				}
				return blocking(&running)(ctx)
			})
		})
		if pe.Value != "hedge boom" {
			t.Errorf("PanicError = %+v, want the hedge's", pe)
		}
		synctest.Wait()
		if n := running.Load(); n != 0 {
			t.Errorf("%d attempts still running", n)
		}
	})
}

func TestDoInlineGoexit(t *testing.T) {
	for _, where := range []string{"first", "hedge"} {
		synctest.Test(t, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
				Limit: &limit.Config{InitialLimit: 2, MinLimit: 1, MaxLimit: 2}})
			var running atomic.Int32
			ended := make(chan bool)
			go func() {
				returned := false
				defer func() { ended <- returned }()
				hedge.DoInline(context.Background(), p, func(ctx context.Context) (int, error) {
					info, _ := hedge.AttemptFrom(ctx)
					if (where == "first") == (info.Index == 0) {
						time.Sleep(20 * time.Millisecond) // after the hedge started
						runtime.Goexit()                  // what t.FailNow does
					}
					return blocking(&running)(ctx)
				})
				returned = true
			}()
			if <-ended {
				t.Errorf("%s: DoInline returned after an attempt called runtime.Goexit; want Goexit in the caller", where)
			}
			synctest.Wait()
			if n := running.Load(); n != 0 {
				t.Errorf("%s: %d attempts still running", where, n)
			}
			if m := p.Measured(); m.InFlight != 0 {
				t.Errorf("%s: InFlight = %d, want 0", where, m.InFlight)
			}
		})
	}
}

func TestDoInlineStartSignalsReachTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		var lg hedge.Log
		start := time.Now()
		v, err := hedge.DoInline(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
			hedgetest.Answer[string]{Stuck: true}, // queued behind others: never starts
			hedgetest.Answer[string]{Starts: true, StartAfter: 2 * time.Millisecond, After: 10 * time.Millisecond, Value: "copy"},
		))
		// As with Do: the tied copy goes out 1ms after the primary, starts 2ms later, and
		// the queued primary is cancelled then, not when the copy wins.
		if err != nil || v != "copy" || time.Since(start) != 11*time.Millisecond {
			t.Fatalf("DoInline = %q, %v after %v; want the copy's answer after 11ms", v, err, time.Since(start))
		}
		if want := "2 attempts over 11ms: discarded (3ms), hedge OK (10ms), at 1ms"; lg.String() != want {
			t.Errorf("log = %q, want %q", lg.String(), want)
		}
	})
}

func TestDoInlineDetachedKeepsTheWinnerAliveUntilRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
		for _, hedgeWins := range []bool{false, true} {
			var discarded atomic.Int32
			ctx, v, hold, err := func() (context.Context, int, hedge.Hold, error) {
				var won context.Context
				v, hold, err := hedge.DoInlineDetached(t.Context(), p, func(ctx context.Context) (int, error) {
					info, _ := hedge.AttemptFrom(ctx)
					if hedgeWins == (info.Index == 0) {
						<-ctx.Done()
						return 0, ctx.Err()
					}
					won = ctx
					return info.Index + 1, nil
				}, func(int, error) { discarded.Add(1) })
				return won, v, hold, err
			}()
			want := 1
			if hedgeWins {
				want = 2
			}
			if err != nil || v != want {
				t.Fatalf("hedge wins %v: DoInlineDetached = %v, %v; want %d", hedgeWins, v, err, want)
			}
			if ctx.Err() != nil {
				t.Errorf("hedge wins %v: the winner's context ended before release", hedgeWins)
			}
			hold.Release()
			if ctx.Err() == nil {
				t.Errorf("hedge wins %v: the winner's context still alive after release", hedgeWins)
			}
			synctest.Wait()
		}
	})
}

func TestDoInlineConcurrentCallsShareOnePolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: noBudget})
		const n = 64
		errs := make(chan error, n)
		for i := range n {
			go func() {
				primary := time.Millisecond
				if i%2 == 0 {
					primary = 100 * time.Millisecond
				}
				v, err := hedge.DoInline(t.Context(), p, slowPrimary(primary, time.Millisecond))
				if err == nil && v == "" {
					err = errors.New("empty answer")
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		m := p.Measured()
		if m.Calls != n || m.HedgesStarted != n/2 || m.InFlight != 0 {
			t.Errorf("Measured = %+v, want %d calls, %d hedges, nothing in flight", m, n, n/2)
		}
	})
}

// TestDoInlineHedgeDueBeforeTheFirstAttemptStarts runs calls whose hedge is due almost at
// once, on the real clock, so that the timer often goes off before the caller's goroutine has
// entered the first attempt. Each first attempt waits for its context, so a call whose
// timer's wake-up was lost would wait for its deadline.
func TestDoInlineHedgeDueBeforeTheFirstAttemptStarts(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Microsecond), Budget: noBudget})
	const calls = 2000
	var lost atomic.Int32
	for range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := hedge.DoInline(ctx, p, blockPrimary)
		cancel()
		if err != nil || v != 2 {
			lost.Add(1)
		}
	}
	if n := lost.Load(); n != 0 {
		t.Errorf("%d of %d calls did not get the hedge's answer", n, calls)
	}
}

// blockPrimary waits for its context in the first attempt and answers 2 in every other.
func blockPrimary(ctx context.Context) (int, error) {
	if info, _ := hedge.AttemptFrom(ctx); info.Index == 0 {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return 2, nil
}

// TestDoInlineStartSignalFromTheFirstAttempt: the first attempt reports that its server
// started it while the caller's goroutine is inside it; a goroutine of its own takes the call
// over to hear it (the caller cannot), and the call ends as usual.
func TestDoInlineStartSignalFromTheFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		start := time.Now()
		v, err := hedge.DoInline(t.Context(), p, func(ctx context.Context) (string, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index == 0 {
				hedge.StartedService(ctx) // at once: the tied copy, due at 1ms, is not needed
				time.Sleep(10 * time.Millisecond)
				return "primary", nil
			}
			<-ctx.Done()
			return "", ctx.Err()
		})
		if err != nil || v != "primary" || time.Since(start) != 10*time.Millisecond {
			t.Fatalf("DoInline = %q, %v after %v; want the primary's answer after 10ms", v, err, time.Since(start))
		}
		if m := p.Measured(); m.HedgesStarted != 0 {
			t.Errorf("HedgesStarted = %d, want 0: the primary reported its start before the copy was due", m.HedgesStarted)
		}
	})
}
