package hedge_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
)

// The budget grows with the traffic that reaches the dependency: calls the open breaker
// fails fast (ErrBreakerOpen), or the full limit refuses (ErrLimitExceeded), send it nothing
// and deposit nothing. Else an outage would fill the budget, to be spent on retries and
// hedges against the dependency the moment it is back.
func TestRefusedCallsDoNotFundTheBudget(t *testing.T) {
	p := hedge.MustNew(hedge.Config{
		Attempts: 2,
		Budget:   budget.Config{Ratio: 0.5, MinPerSecond: budget.Zero},
		Breaker:  &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Hour},
		Backoff:  hedge.Backoff{Jitter: hedge.Off},
	})
	// Trip the breaker: one call, two failed attempts.
	c := p.NewCall(hedge.CallOptions{})
	c.Start(t0)
	c.AttemptDone(ms(1), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("boom")})
	c.TimerFired(ms(11))
	c.AttemptDone(ms(12), 1, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("boom")})
	if !c.Done() {
		t.Fatal("call not done")
	}
	before := p.MeasuredAt(ms(13)).Budget
	for i := range 100 {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(ms(20 + float64(i)))
		if !errors.Is(c.Err(), hedge.ErrBreakerOpen) {
			t.Fatalf("call %d: %v, want ErrBreakerOpen", i, c.Err())
		}
	}
	if after := p.MeasuredAt(ms(200)).Budget; after > before {
		t.Errorf("100 calls refused by the open breaker (none reached the dependency) raised the budget from %v to %v withdrawals", before, after)
	}

	// The limit: one permit, held; calls refused while it is.
	lp := hedge.MustNew(hedge.Config{
		Budget: budget.Config{Ratio: 0.5, MinPerSecond: budget.Zero},
		Limit:  &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1},
	})
	held := lp.NewCall(hedge.CallOptions{})
	held.Start(t0)
	before = lp.MeasuredAt(ms(1)).Budget
	for i := range 100 {
		c := lp.NewCall(hedge.CallOptions{})
		c.Start(ms(2 + float64(i)))
		if !errors.Is(c.Err(), hedge.ErrLimitExceeded) {
			t.Fatalf("call %d with the limit's only permit held: %v, want ErrLimitExceeded", i, c.Err())
		}
	}
	if after := lp.MeasuredAt(ms(200)).Budget; after > before {
		t.Errorf("100 calls refused by the full limit raised the budget from %v to %v withdrawals", before, after)
	}
}
