package hedge_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// WithTrigger's doc: "The policy's MinimumDelay and MaximumDelay clamp the quantile." With
// no MaximumDelay (the default) the MinimumDelay clamp holds all the same: a per-call
// quantile below it hedges no sooner than the policy's own trigger may.
func TestOverrideQuantileKeepsMinimumDelay(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumDelay: 10 * time.Millisecond}), Budget: noBudget})
	warmWith(p, 40, 2*time.Millisecond) // every attempt 2ms: far below MinimumDelay
	now := t0.Add(time.Second)
	if m := p.MeasuredAt(now); m.Threshold != 10*time.Millisecond {
		t.Fatalf("policy threshold %v, want the 10ms MinimumDelay", m.Threshold)
	}
	q := hedge.AtQuantile(0.5)
	as := p.NewCall(hedge.CallOptions{Trigger: &q}).Start(now)
	if len(as) != 2 || as[1].Kind != hedge.ArmTimer {
		t.Fatalf("Start = %q", actions(as))
	}
	if d := as[1].At.Sub(now); d < 10*time.Millisecond {
		t.Errorf("per-call AtQuantile(0.5) hedge due after %v, want at least MinimumDelay 10ms", d)
	}
}

// A Backoff.Maximum of math.MaxInt64 (no cap), once the backoff reaches it, is the wait:
// converted through a float64 it would be 2^63, which as a Duration wraps round to the most
// negative one, and the retry would fire at once instead of after the longest wait.
func TestBackoffHugeMaximum(t *testing.T) {
	var delays []time.Duration
	p := hedge.MustNew(hedge.Config{
		Attempts: 6,
		Budget:   noBudget,
		Backoff:  hedge.Backoff{Initial: 10 * time.Millisecond, Multiplier: 1000, Maximum: math.MaxInt64, Jitter: hedge.Off},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.RetryScheduled {
				delays = append(delays, e.Delay)
			}
		},
	})
	c := p.NewCall(hedge.CallOptions{})
	now := t0
	c.Start(now)
	fail := hedge.Outcome{Class: hedge.Retriable, Err: errors.New("boom")}
	for k := 0; k < 5; k++ {
		as := c.AttemptDone(now, k, fail)
		var at time.Time
		for _, a := range as {
			if a.Kind == hedge.ArmTimer {
				at = a.At
			}
		}
		if at.IsZero() {
			t.Fatalf("attempt %d: no retry timer: %q", k, actions(as))
		}
		if !at.After(now) {
			t.Errorf("retry %d armed at %v, not after its failure at %v (delays %v)", k+1, at, now, delays)
			return
		}
		now = at
		c.TimerFired(now)
	}
	for i, d := range delays {
		if d < 0 {
			t.Errorf("RetryScheduled %d: Delay %v < 0", i, d)
		}
	}
}

// A hedging trigger with MaximumConcurrent 1 could never hedge (a hedge runs beside the
// attempt it copies), and would be off without a word: Validate refuses it, as it refuses
// Attempts 1. Without a trigger, MaximumConcurrent 1 is retries alone, and valid.
func TestMaximumConcurrentOneWithATriggerIsRefused(t *testing.T) {
	for _, tr := range []hedge.Trigger{hedge.After(5 * time.Millisecond), hedge.AtQuantile(0.95), hedge.Tied()} {
		cfg := hedge.Config{Trigger: tr, Attempts: 3, MaximumConcurrent: 1, Budget: noBudget}
		if err := cfg.Validate(); !errors.Is(err, hedge.ErrInvalidConfig) {
			t.Errorf("Trigger %v, MaximumConcurrent 1: Validate = %v, want an error wrapping ErrInvalidConfig", tr, err)
		}
	}
	if err := (hedge.Config{Attempts: 3, MaximumConcurrent: 1}).Validate(); err != nil {
		t.Errorf("retries alone with MaximumConcurrent 1: Validate = %v, want nil", err)
	}
}

// A hedge a failure asks for at once (Outcome.Next) reports as its Delay how long after the
// latest attempt's start it came, not the threshold it did not wait for.
func TestHedgeAskedByAFailureReportsItsDelay(t *testing.T) {
	delays := map[int]time.Duration{}
	p := hedge.MustNew(hedge.Config{
		Trigger: hedge.After(50 * time.Millisecond), Attempts: 3, MaximumConcurrent: 3, Budget: noBudget,
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.HedgeStarted {
				delays[e.Attempt] = e.Delay
			}
		},
	})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(t0)
	c.TimerFired(ms(50)) // the first hedge, attempt 1, at the threshold
	c.AttemptDone(ms(60), 1, hedge.Outcome{Class: hedge.Retriable, Next: true, Err: errors.New("try another")})
	if d, ok := delays[1]; !ok || d != 50*time.Millisecond {
		t.Fatalf("the hedge at the threshold: Delay %v (sent %v), want 50ms", d, ok)
	}
	if d, ok := delays[2]; !ok || d != 10*time.Millisecond {
		t.Errorf("the hedge attempt 1's failure asked for, 10ms after attempt 1 started: Delay %v (sent %v), want 10ms", d, ok)
	}
}
