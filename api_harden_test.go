package hedge_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

// RetryScheduled's doc: "a failed attempt will be retried after Delay (Attempt is the failed one)".
func TestRetryScheduledNamesFailedAttempt(t *testing.T) {
	var evs []hedge.Event
	p := hedge.MustNew(hedge.Config{
		Trigger: hedge.After(10 * time.Millisecond), Attempts: 3, MaximumConcurrent: 2,
		Budget:   budget.Config{Off: true},
		Observer: func(e hedge.Event) { evs = append(evs, e) },
	})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.TimerFired(ms(10))                                                                             // hedge 1
	c.AttemptDone(ms(11), 1, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("hedge failed")}) // hedge fails first
	c.AttemptDone(ms(15), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("first failed")}) // then the first: nothing in flight, retry
	for _, e := range evs {
		if e.Kind == hedge.RetryScheduled {
			if e.Attempt != 0 {
				t.Fatalf("RetryScheduled.Attempt = %d; the attempt whose failure left nothing in flight (the failed one) is 0", e.Attempt)
			}
			return
		}
	}
	t.Fatal("no RetryScheduled event")
}

// Config.Validate "reports whether c is a valid configuration ... [New] returns the same error".
func TestValidateAgreesWithNewOnWindow(t *testing.T) {
	for _, tr := range []hedge.Trigger{
		hedge.AtQuantile(0.95, hedge.Adaptive{Window: 500 * time.Microsecond}),
		hedge.Tied(hedge.Adaptive{Window: 500 * time.Microsecond}),
	} {
		cfg := hedge.Config{Trigger: tr}
		verr := cfg.Validate()
		_, nerr := hedge.New(cfg)
		if (verr == nil) != (nerr == nil) {
			t.Errorf("%v: Validate() = %v, New() error = %v", tr, verr, nerr)
		}
	}
}

// WithTrigger panics for a trigger it cannot take (StartAware, Tied), but takes a negative
// After delay and a quantile outside [0.5, 1) silently.
func TestWithTriggerRejectsInvalid(t *testing.T) {
	for _, tr := range []hedge.Trigger{hedge.After(-time.Second), hedge.AtQuantile(0.1), hedge.AtQuantile(2)} {
		func() {
			defer func() { recover() }()
			hedge.WithTrigger(context.Background(), tr)
			t.Errorf("WithTrigger(%v) accepted an invalid trigger (config.Validate refuses it)", tr)
		}()
	}
}

// Adaptive: "A field the trigger does not read is an error ([Config.Validate]), never silently
// ignored". With WinRate.Floor Off (no loop) the loop's other fields are not read.
func TestWinRateOffWithOtherFields(t *testing.T) {
	for _, w := range []winrate.Config{
		{Floor: hedge.Off, Window: time.Minute},
		{Floor: hedge.Off, MinimumAllowance: 5}, // out of range even for a loop
	} {
		cfg := hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{WinRate: w})}
		if err := cfg.Validate(); err == nil {
			t.Errorf("WinRate %+v: Validate() = nil; the fields beside Floor Off are ignored", w)
		}
	}
}

// Backoff{Initial: 2s}: the default Maximum (1s) silently caps the first retry's wait below
// the Initial the user set (Adaptive.MaximumDelay < MinimumDelay is an error; this is not).
func TestBackoffInitialAboveMaximum(t *testing.T) {
	cfg := hedge.Config{Attempts: 2, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: 2 * time.Second, Jitter: hedge.Off}}
	if err := cfg.Validate(); err != nil {
		t.Skip(err)
	}
	var delay time.Duration
	cfg.Observer = func(e hedge.Event) {
		if e.Kind == hedge.RetryScheduled {
			delay = e.Delay
		}
	}
	p := hedge.MustNew(cfg)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.AttemptDone(ms(1), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("x")})
	if delay != 2*time.Second {
		t.Errorf("Validate() = nil for Backoff{Initial: 2s}, yet the first retry waits %v, not 2s", delay)
	}
}

// A Classify that returns a failure without Err loses the attempt's error: the call's error
// matches nothing the attempt returned.
func TestClassifyWithoutErr(t *testing.T) {
	sentinel := errors.New("backend down")
	p := hedge.MustNew(hedge.Config{Classify: func(err error) hedge.Outcome {
		if err != nil {
			return hedge.Outcome{Class: hedge.Retriable}
		}
		return hedge.Outcome{}
	}})
	_, err := hedge.Do(context.Background(), p, func(context.Context) (int, error) { return 0, sentinel })
	if !errors.Is(err, sentinel) {
		t.Errorf("err = %q; errors.Is(err, the attempt's error) = false", err)
	}
}

func TestSubpackageSentinels(t *testing.T) {
	cases := []struct {
		cfg  hedge.Config
		want error
	}{
		{hedge.Config{Budget: budget.Config{Ratio: -1}}, budget.ErrInvalidConfig},
		{hedge.Config{Breaker: &breaker.Config{DegradedAt: 2}}, breaker.ErrInvalidConfig},
		{hedge.Config{Limit: &limit.Config{MinLimit: -1}}, limit.ErrInvalidConfig},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{WinRate: winrate.Config{MinimumAllowance: 2}})}, winrate.ErrInvalidConfig},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{Window: time.Microsecond})}, hedge.ErrInvalidConfig},
	}
	for _, c := range cases {
		verr := c.cfg.Validate()
		_, nerr := hedge.New(c.cfg)
		if !errors.Is(verr, hedge.ErrInvalidConfig) || !errors.Is(verr, c.want) {
			t.Errorf("Validate: %v does not match %v", verr, c.want)
		}
		if !errors.Is(nerr, hedge.ErrInvalidConfig) || !errors.Is(nerr, c.want) {
			t.Errorf("New: %v does not match %v", nerr, c.want)
		}
	}
}

// Config.Observer: "receives every event of every call, synchronously in the goroutine
// driving the call". Measured drives no call, yet it delivers BreakerChanged to the Observer,
// and a panic there escapes Measured (a metrics exporter's callback).
func TestMeasuredRunsObserver(t *testing.T) {
	armed := false
	var fromMeasured []string
	p := hedge.MustNew(hedge.Config{
		Breaker: &breaker.Config{},
		Observer: func(e hedge.Event) {
			if armed {
				fromMeasured = append(fromMeasured, e.Kind.String()+" "+e.State)
				panic("observer")
			}
		},
	})
	now := t0
	for range 10 {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("x")})
		now = now.Add(10 * time.Millisecond)
	}
	if m := p.MeasuredAt(now); m.Breaker != "open" {
		t.Fatalf("breaker %q, want open", m.Breaker)
	}
	armed = true
	func() {
		defer func() {
			if x := recover(); x != nil {
				t.Errorf("MeasuredAt panicked with the Observer's panic: %v", x)
			}
		}()
		if m := p.MeasuredAt(now.Add(time.Minute)); m.Breaker != "half-open" {
			t.Errorf("a minute after the breaker opened, Measured says %q, want half-open", m.Breaker)
		}
	}()
	if len(fromMeasured) > 0 {
		t.Errorf("MeasuredAt, driving no call, delivered %v to the Observer", fromMeasured)
	}
}

// CallFinished (Duration, Err; Attempt is the winner or -1) must describe how the call ended.
func TestCallFinishedAfterObserverPanic(t *testing.T) {
	var fin []hedge.Event
	panicked := false
	p := hedge.MustNew(hedge.Config{Observer: func(e hedge.Event) {
		if e.Kind == hedge.CallFinished {
			fin = append(fin, e)
		}
		if e.Kind == hedge.AttemptFinished && !panicked {
			panicked = true
			panic("observer")
		}
	}})
	var got any
	func() {
		defer func() { got = recover() }()
		hedge.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	}()
	if _, ok := got.(*hedge.PanicError); !ok {
		t.Fatalf("Do did not panic with a *PanicError: %v", got)
	}
	if len(fin) != 1 {
		t.Fatalf("%d CallFinished events, want 1", len(fin))
	}
	for _, e := range fin {
		if e.Err == nil || e.Attempt != -1 {
			t.Errorf("Do panicked with %v, but CallFinished said Attempt=%d Err=%v", got, e.Attempt, e.Err)
		}
	}
}

// The attempt's context is "derived from ctx": once ctx's deadline passes, a derived
// context's Err is context.DeadlineExceeded.
func TestAttemptContextDeadlineExceeded(t *testing.T) {
	for _, d := range []struct {
		name string
		do   func(context.Context, *hedge.Policy, func(context.Context) (int, error)) (int, error)
	}{{"Do", hedge.Do[int]}, {"DoInline", hedge.DoInline[int]}} {
		name, do := d.name, d.do
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := hedge.MustNew(hedge.Config{})
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer cancel()
				seen := make(chan error, 1)
				_, err := do(ctx, p, func(ctx context.Context) (int, error) {
					<-ctx.Done()
					seen <- ctx.Err()
					return 0, ctx.Err()
				})
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s err = %v", name, err)
				}
				got := <-seen
				t.Logf("%s: attempt saw %v", name, got)
				if got != context.DeadlineExceeded {
					t.Errorf("%s: attempt's ctx.Err() = %v after the caller's deadline passed; want context.DeadlineExceeded", name, got)
				}
			})
		})
	}
}
