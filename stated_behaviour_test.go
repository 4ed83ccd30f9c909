package hedge_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
)

// Fast failures are not latency samples (docs/design.md, "The hedge trigger"): a 5xx in a
// millisecond says nothing about how long the dependency takes to answer, and counting it
// would drag the threshold down. A policy whose calls only fail fast stays cold.
func TestFastFailuresAreNotSamples(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget})
	now := t0
	for range 50 {
		failCall(p.NewCall(hedge.CallOptions{}), now) // two attempts, each failing in 1ms
		now = now.Add(100 * time.Millisecond)
	}
	if m := p.MeasuredAt(now); m.Warm {
		t.Errorf("after 50 calls whose 100 attempts all failed fast the estimator is warm (threshold %v); failures must not be samples", m.Threshold)
	}
}

// OverloadCooldown 0 means 5s (Config): hedging pauses 5s after an overload signal.
func TestOverloadCooldownDefaultsToFiveSeconds(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget, Attempts: 3, MaximumConcurrent: 2})
	hedgedAt := func(at time.Time) bool {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(at)
		ok := has(c.TimerFired(at.Add(20*time.Millisecond)), hedge.StartAttempt)
		c.AttemptDone(at.Add(30*time.Millisecond), 0, hedge.Outcome{})
		return ok
	}
	over := p.NewCall(hedge.CallOptions{})
	over.Start(t0)
	over.AttemptDone(t0.Add(time.Millisecond), 0, hedge.Classify(hedge.MarkOverloaded(errors.New("429"), 0)))
	over.Cancel(t0.Add(time.Millisecond), nil)
	if hedgedAt(t0.Add(4500 * time.Millisecond)) {
		t.Error("hedged 4.5s after an overload signal: the default cool-down is 5s")
	}
	if !hedgedAt(t0.Add(5500 * time.Millisecond)) {
		t.Error("not hedged 5.5s after an overload signal: the default cool-down is 5s")
	}
}

// A call its caller cancelled says nothing about the dependency (breaker.Ignored): it is not
// a failure, and calls cancelled in a row do not trip the breaker.
func TestCallerCancelledCallsAreNotBreakerFailures(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
		Breaker: &breaker.Config{ConsecutiveFailures: 2}})
	now := t0
	for range 5 {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.TimerFired(now.Add(20 * time.Millisecond)) // a hedge is running too
		c.Cancel(now.Add(25*time.Millisecond), nil)
		now = now.Add(50 * time.Millisecond)
	}
	if m := p.MeasuredAt(now); m.Breaker != "closed" || m.ErrorRate != 0 {
		t.Errorf("after 5 calls cancelled by their caller: breaker %s, error rate %v; want closed, 0", m.Breaker, m.ErrorRate)
	}
}
