package hedge_test

import (
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
