package hedge_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

// recoverPanicError runs f and returns the *PanicError it panicked with, failing the test
// when it returned or panicked with anything else.
func recoverPanicError(t *testing.T, f func()) (pe *hedge.PanicError) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		var ok bool
		if pe, ok = v.(*hedge.PanicError); !ok {
			t.Fatalf("recovered %#v; want a *hedge.PanicError", v)
		}
	}()
	f()
	return nil
}

// blocking is an attempt function that answers after a second unless cancelled, counting
// the attempts running.
func blocking(running *atomic.Int32) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
			return 1, nil
		}
	}
}

func TestPanickingObserverEndsTheCallAndLeavesThePolicyConsistent(t *testing.T) {
	for _, kind := range []hedge.EventKind{hedge.AttemptStarted, hedge.HedgeStarted, hedge.AttemptDiscarded, hedge.CallFinished} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var panicking atomic.Bool
				panicking.Store(true)
				p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
					Limit: &limit.Config{InitialLimit: 2, MinLimit: 2, MaxLimit: 2},
					Observer: func(e hedge.Event) {
						if e.Kind == kind && panicking.Load() {
							panic("observer " + kind.String())
						}
					}})
				var running atomic.Int32
				fn := func(ctx context.Context) (int, error) {
					if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
						return 2, nil // the hedge wins at once, the primary is discarded
					}
					return blocking(&running)(ctx)
				}
				for range 5 { // more calls than the limit has permits
					pe := recoverPanicError(t, func() { hedge.Do(t.Context(), p, fn) })
					if pe.Where != "Observer" || pe.Value != "observer "+kind.String() {
						t.Fatalf("PanicError = %v (Where %q); want the observer's panic", pe, pe.Where)
					}
					synctest.Wait()
					if n := running.Load(); n != 0 {
						t.Fatalf("%d attempts still running after the call panicked", n)
					}
					if m := p.Measured(); m.InFlight != 0 {
						t.Fatalf("InFlight = %d after the call panicked, want 0 (a permit leaked)", m.InFlight)
					}
				}
				panicking.Store(false)
				if v, err := hedge.Do(t.Context(), p, fn); err != nil || v != 2 {
					t.Fatalf("after the panics Do = %v, %v; want the hedge's answer", v, err)
				}
			})
		})
	}
}

func TestPanickingObserverDoesNotLoseTheHalfOpenTrial(t *testing.T) {
	var panicking atomic.Bool
	p := hedge.MustNew(hedge.Config{Budget: noBudget,
		Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Second},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.AttemptStarted && panicking.Load() {
				panic("observer")
			}
		}})
	failCall(p.NewCall(hedge.CallOptions{}), t0)
	at := t0.Add(2 * time.Second) // half-open
	panicking.Store(true)
	trial := p.NewCall(hedge.CallOptions{})
	func() {
		defer func() { recover() }() // today's code lets the panic out of Start
		trial.Start(at)
	}()
	var pe *hedge.PanicError
	if !trial.Done() || !errors.As(trial.Err(), &pe) {
		t.Fatalf("after the observer panicked: done %v, err %v; want the call ended with a *PanicError", trial.Done(), trial.Err())
	}
	panicking.Store(false)
	next := p.NewCall(hedge.CallOptions{})
	if next.Start(at.Add(time.Millisecond)); next.Err() != nil {
		t.Fatalf("the next call got %v: the trial ticket was lost", next.Err())
	}
}

// The breaker turns half-open inside the trial call's Acquire and tells the Observer there:
// an Observer that panics on that event must not take the trial's permit with it, or the
// breaker stays half-open with no trial out and refuses every later call.
func TestPanickingObserverOnHalfOpenDoesNotWedgeTheBreaker(t *testing.T) {
	var panicking atomic.Bool
	p := hedge.MustNew(hedge.Config{Budget: noBudget,
		Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Second},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.BreakerChanged && e.State == breaker.HalfOpen.String() && panicking.Load() {
				panic("observer")
			}
		}})
	failCall(p.NewCall(hedge.CallOptions{}), t0)
	at := t0.Add(2 * time.Second) // past OpenFor: the next Acquire turns the breaker half-open
	panicking.Store(true)
	trial := p.NewCall(hedge.CallOptions{})
	trial.Start(at)
	var pe *hedge.PanicError
	if !trial.Done() || !errors.As(trial.Err(), &pe) {
		t.Fatalf("after the observer panicked: done %v, err %v; want the call ended with a *PanicError", trial.Done(), trial.Err())
	}
	panicking.Store(false)
	for i := range 3 {
		next := p.NewCall(hedge.CallOptions{})
		now := at.Add(time.Duration(i+1) * time.Millisecond)
		if next.Start(now); next.Err() != nil {
			t.Fatalf("call %d after the panic got %v: the half-open trial's permit was lost", i, next.Err())
		}
		next.AttemptDone(now, 0, hedge.Outcome{}) // the trial succeeds: the breaker closes
	}
}

func TestPanickingClassifyEndsTheCallAndReleasesItsPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Budget: noBudget,
			Limit:    &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1},
			Classify: func(error) hedge.Outcome { panic("classify") }})
		for range 3 {
			pe := recoverPanicError(t, func() {
				hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) { return 1, nil })
			})
			if pe.Where != "Classify" {
				t.Fatalf("Where = %q, want Classify", pe.Where)
			}
			if m := p.Measured(); m.InFlight != 0 {
				t.Fatalf("InFlight = %d after Classify panicked, want 0", m.InFlight)
			}
		}
	})
}

func TestPanicErrorMessageIsOneLineAndKeepsTheStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{})
		pe := recoverPanicError(t, func() {
			hedge.Do(t.Context(), p, func(ctx context.Context) (int, error) { panic("boom") })
		})
		if msg := pe.Error(); msg != "hedge: attempt panicked: boom" {
			t.Errorf("Error() = %q, want one line without the stack", msg)
		}
		if !strings.Contains(string(pe.Stack), "harden_test.go") {
			t.Errorf("Stack does not show the panicking function:\n%s", pe.Stack)
		}
	})
}

func TestGoexitInTheOnlyAttemptEndsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Limit: &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
		ended := make(chan bool)
		go func() {
			returned := false
			defer func() { ended <- returned }()
			hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) {
				runtime.Goexit() // what t.FailNow does
				return 0, nil
			})
			returned = true
		}()
		if <-ended {
			t.Error("Do returned after its only attempt called runtime.Goexit; want Goexit in the caller too")
		}
		if m := p.Measured(); m.InFlight != 0 {
			t.Errorf("InFlight = %d, want 0", m.InFlight)
		}
	})
}

func TestFastPermanentFailureDoesNotBeatASlowSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Attempts: 3, Budget: noBudget})
		var started atomic.Int32
		start := time.Now()
		v, err := hedge.Do(t.Context(), p, func(ctx context.Context) (string, error) {
			started.Add(1)
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				return "", hedge.MarkPermanent(errors.New("404 from a stale replica"))
			}
			time.Sleep(100 * time.Millisecond)
			return "200", nil
		})
		if err != nil || v != "200" {
			t.Fatalf("Do = %q, %v; want the slow success", v, err)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("answered after %v, want 100ms", d)
		}
		if n := started.Load(); n != 2 {
			t.Errorf("%d attempts started, want 2 (no hedge after a final answer)", n)
		}
	})
}

func TestWhenEveryAttemptFailsThePermanentFailureIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Attempts: 3, Budget: noBudget})
		unavailable, notFound := errors.New("503"), errors.New("404")
		var started atomic.Int32
		_, err := hedge.Do(t.Context(), p, func(ctx context.Context) (string, error) {
			started.Add(1)
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				return "", hedge.MarkPermanent(notFound) // answers first
			}
			time.Sleep(100 * time.Millisecond)
			return "", unavailable // answers last
		})
		var ae *hedge.AttemptsError
		if !errors.As(err, &ae) || len(ae.Attempts) != 2 {
			t.Fatalf("err = %v; want an AttemptsError with 2 attempts", err)
		}
		if !errors.Is(ae.Attempts[0], unavailable) || !errors.Is(ae.Attempts[1], notFound) {
			t.Errorf("Attempts = %v; want start order [503, 404]", ae.Attempts)
		}
		if !errors.Is(ae.Err, notFound) || !strings.HasPrefix(err.Error(), "hedge: all 2 attempts failed: 404") {
			t.Errorf("Err = %v, message %q; want the permanent 404 named first", ae.Err, err)
		}
		if n := started.Load(); n != 2 {
			t.Errorf("%d attempts started, want 2: a final answer is not retried", n)
		}
	})
}

func TestAmongRetriableFailuresTheLastToAnswerIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Attempts: 2, Budget: noBudget})
		first, last := errors.New("primary timed out"), errors.New("hedge refused")
		_, err := hedge.Do(t.Context(), p, func(ctx context.Context) (string, error) {
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				time.Sleep(100 * time.Millisecond)
				return "", last
			}
			time.Sleep(50 * time.Millisecond)
			return "", first
		})
		var ae *hedge.AttemptsError
		if !errors.As(err, &ae) || ae.Err != last {
			t.Fatalf("err = %v; want an AttemptsError naming the last to answer", err)
		}
	})
}

func TestZeroPolicyIsRefusedWithAMessage(t *testing.T) {
	var p hedge.Policy
	func() {
		defer func() {
			msg, _ := recover().(string)
			if !strings.HasPrefix(msg, "hedge: ") {
				t.Errorf("Do on a zero Policy panicked with %q; want a hedge: message", msg)
			}
		}()
		hedge.Do(context.Background(), &p, func(ctx context.Context) (int, error) { return 0, nil })
	}()
	if m := p.Measured(); m.Calls != 0 || m.Warm {
		t.Errorf("Measured of a zero Policy = %+v, want nothing learnt", m)
	}
}

func TestDoDetachedWinnerEndsWithContextCanceledWhateverTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{})
		ctx, cancel := context.WithCancelCause(t.Context())
		var winner context.Context
		_, hold, err := hedge.DoDetached(ctx, p, func(ctx context.Context) (int, error) {
			winner = ctx
			return 1, nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Release()
		cancel(errors.New("the user navigated away"))
		<-winner.Done()
		if !errors.Is(winner.Err(), context.Canceled) {
			t.Errorf("winner's Err() = %v, want context.Canceled", winner.Err())
		}
	})
}

func TestHedgeDelayIsClampedToMinimumAndMaximumDelay(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        hedge.Config
		sample     time.Duration
		wantThresh time.Duration
	}{
		{"minimum", hedge.Config{Trigger: hedge.AtQuantile(0.9, hedge.Adaptive{MinimumSamples: 5, MinimumDelay: 30 * time.Millisecond})}, time.Millisecond, 30 * time.Millisecond},
		{"maximum", hedge.Config{Trigger: hedge.AtQuantile(0.9, hedge.Adaptive{MinimumSamples: 5, MaximumDelay: 50 * time.Millisecond})}, time.Second, 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Budget = noBudget
			p := hedge.MustNew(cfg)
			at := t0
			for range 10 {
				call := p.NewCall(hedge.CallOptions{})
				call.Start(at)
				at = at.Add(c.sample)
				call.AttemptDone(at, 0, hedge.Outcome{})
			}
			if m := p.MeasuredAt(at); !m.Warm || m.Threshold != c.wantThresh {
				t.Errorf("Measured: warm %v, threshold %v; want %v", m.Warm, m.Threshold, c.wantThresh)
			}
			call := p.NewCall(hedge.CallOptions{})
			acts := call.Start(at)
			if len(acts) != 2 || acts[1].Kind != hedge.ArmTimer || acts[1].At.Sub(at) != c.wantThresh {
				t.Errorf("Start = %v; want the hedge timer armed %v after the start", acts, c.wantThresh)
			}
		})
	}
}

func TestFailedHalfOpenTrialIsNotRetried(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Attempts: 3, Budget: noBudget,
		Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Second}})
	failCall(p.NewCall(hedge.CallOptions{}), t0)
	at := t0.Add(2 * time.Second)
	trial := p.NewCall(hedge.CallOptions{})
	if acts := trial.Start(at); !has(acts, hedge.StartAttempt) {
		t.Fatal("the half-open breaker refused its trial")
	}
	acts := trial.AttemptDone(at.Add(time.Millisecond), 0, transient)
	if has(acts, hedge.ArmTimer) || !trial.Done() || trial.Attempts() != 1 {
		t.Fatalf("failed trial: actions %v, done %v, %d attempts; want the call over after one attempt", acts, trial.Done(), trial.Attempts())
	}
	if st := p.MeasuredAt(at.Add(2 * time.Millisecond)).Breaker; st != "open" {
		t.Errorf("after a failed trial the breaker is %s, want open", st)
	}
}

func TestSentinelsMatchTheirSubPackagesAndConfigErrorsWrapBoth(t *testing.T) {
	if !errors.Is(hedge.ErrLimitExceeded, limit.ErrLimitExceeded) || !errors.Is(hedge.ErrBreakerOpen, breaker.ErrOpen) {
		t.Error("hedge's sentinels do not match the limit's and the breaker's")
	}
	for _, c := range []struct {
		cfg hedge.Config
		sub error
	}{
		{hedge.Config{Breaker: &breaker.Config{FailureRatio: 2}}, breaker.ErrInvalidConfig},
		{hedge.Config{Limit: &limit.Config{Smoothing: 2}}, limit.ErrInvalidConfig},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{WinRate: winrate.Config{Floor: 2}})}, winrate.ErrInvalidConfig},
	} {
		_, err := hedge.New(c.cfg)
		if !errors.Is(err, hedge.ErrInvalidConfig) || !errors.Is(err, c.sub) {
			t.Errorf("New = %v; want it to wrap hedge.ErrInvalidConfig and %v", err, c.sub)
		}
	}
}

// A cold policy has no threshold, but none could be below MinimumDelay: the cold suppression
// is reported when a call has run that long, with that delay, and a call that answers sooner
// (which no threshold would have hedged) is not counted as suppressed.
func TestColdSuppressionIsReportedWhenAHedgeCouldBeDue(t *testing.T) {
	var got []hedge.Event
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: func(e hedge.Event) {
		if e.Kind == hedge.HedgeSuppressed {
			got = append(got, e)
		}
	}})
	fast := p.NewCall(hedge.CallOptions{})
	if a := actions(fast.Start(t0)); a != "start 0, timer 10ms" {
		t.Fatalf("a cold call starts with %q; want its first attempt and a timer at MinimumDelay", a)
	}
	fast.AttemptDone(t0.Add(5*time.Millisecond), 0, hedge.Outcome{})
	if len(got) != 0 || p.MeasuredAt(t0.Add(5 * time.Millisecond)).Suppressed[hedge.ReasonCold] != 0 {
		t.Fatalf("a cold call that answered in 5ms was counted as suppressed: %+v", got)
	}
	slow := p.NewCall(hedge.CallOptions{})
	slow.Start(ms(20))
	if a := actions(slow.TimerFired(ms(30))); a != "" {
		t.Fatalf("a cold call at MinimumDelay did %q; want nothing", a)
	}
	if len(got) != 1 || got[0].Reason != hedge.ReasonCold || got[0].Delay != 10*time.Millisecond || !got[0].Time.Equal(ms(30)) {
		t.Fatalf("suppressions = %+v; want one, cold, 10ms into the call, with delay 10ms", got)
	}
	if n := p.MeasuredAt(ms(30)).Suppressed[hedge.ReasonCold]; n != 1 {
		t.Fatalf("Measured counts %d cold suppressions, want 1", n)
	}
}
