package hedge_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// overloadThenHedge: call 1 at t0 fails overloaded (RetryAfter ra); call 2 starts at t1 and its
// hedge is due 10ms later. It reports whether call 2's hedge started.
func overloadThenHedge(t *testing.T, ra time.Duration, t0, t1 time.Time) (bool, hedge.Measured) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget, Attempts: 2})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(t0)
	c.AttemptDone(t0.Add(time.Millisecond), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("busy"), Overload: true, RetryAfter: ra})
	c.Cancel(t0.Add(2*time.Millisecond), errors.New("gave up"))
	c2 := p.NewCall(hedge.CallOptions{})
	c2.Start(t1)
	acts := c2.TimerFired(t1.Add(10 * time.Millisecond))
	for _, a := range acts {
		if a.Kind == hedge.StartAttempt {
			return true, p.MeasuredAt(t1)
		}
	}
	return false, p.MeasuredAt(t1)
}

func TestOverloadHugeRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	if h, m := overloadThenHedge(t, 24*time.Hour, t0, t1); h {
		t.Fatalf("1-day Retry-After: hedge started a minute later (%v)", m.OverloadUntil)
	}
	h, m := overloadThenHedge(t, math.MaxInt64, t0, t1)
	if h {
		t.Errorf("Retry-After of MaxInt64 (292 years): hedge started a minute later; OverloadUntil = %v", m.OverloadUntil)
	}
	h, m = overloadThenHedge(t, 250*365*24*time.Hour, t0, t1)
	if h {
		t.Errorf("Retry-After of 250 years: hedge started a minute later; OverloadUntil = %v", m.OverloadUntil)
	}
}
