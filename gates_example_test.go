package hedge_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

// A breaker that is closed is not a dependency that is healthy. With DegradedAt 0.5 (the
// default) and the breaker's 50% trip point, hedging stops once a quarter of calls fail:
// extra copies sent to a failing dependency only add to its load.
func ExampleConfig_degradedBreaker() {
	p := hedge.MustNew(hedge.Config{
		Trigger: hedge.After(20 * time.Millisecond),
		Budget:  budget.Config{Off: true},
		// Trips after 5 failed calls in a row, or at 50% failures over 10s (20 calls minimum);
		// degraded from 25%.
		Breaker: &breaker.Config{DegradedAt: 0.5},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.HedgeSuppressed {
				fmt.Println("suppressed:", e.Reason)
			}
		},
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 { // every third call fails (each is sent once: not repeatable)
		c := p.NewCall(hedge.CallOptions{Repeatable: hedge.NotRepeatable})
		c.Start(now)
		o := hedge.Outcome{}
		if i%3 == 0 {
			o = hedge.Outcome{Class: hedge.Retriable, Err: errors.New("unavailable")}
		}
		c.AttemptDone(now.Add(5*time.Millisecond), 0, o)
		now = now.Add(100 * time.Millisecond)
	}
	m := p.MeasuredAt(now)
	fmt.Printf("breaker %s, error rate %.2f\n", m.Breaker, m.ErrorRate)
	slow := p.NewCall(hedge.CallOptions{})
	slow.Start(now)
	slow.TimerFired(now.Add(20 * time.Millisecond))
	// Output:
	// breaker closed, error rate 0.35
	// suppressed: error_rate
}

// With Criticality on, calls whose context carries Sheddable are never hedged: under
// pressure they are the first work to give up.
func ExampleConfig_criticality() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), NeverHedgeSheddable: true})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, crit := range []hedge.Criticality{hedge.Critical, hedge.Sheddable} {
		c := p.NewCall(hedge.CallOptions{Criticality: crit})
		c.Start(now)
		hedged := false
		for _, a := range c.TimerFired(now.Add(20 * time.Millisecond)) {
			hedged = hedged || a.Kind == hedge.StartAttempt
		}
		fmt.Println(crit, "hedged:", hedged)
	}
	// In Do, the criticality comes from the context:
	//	ctx = hedge.WithCriticality(ctx, hedge.Sheddable)
	// Output:
	// critical hedged: true
	// sheddable hedged: false
}

// The win-rate loop watches whether hedges still win. When they stop (the slowness is not
// bad luck any more), it halves the share of hedges sent, down to a floor, and adds it back
// once they win again.
func ExampleConfig_winRate() {
	p := hedge.MustNew(hedge.Config{
		Budget: budget.Config{Off: true},
		Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{
			// A threshold pinned at 20ms once one latency is known, and no other gate.
			MinimumSamples: 1, MinimumDelay: 20 * time.Millisecond, MaximumDelay: 20 * time.Millisecond,
			MinimumInService: hedge.Off, BacklogRatio: hedge.Off,
			WinRate: winrate.Config{Floor: 0.2, Window: 4 * time.Second},
		}),
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 2000 { // twenty seconds of slow calls whose hedges lose
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.TimerFired(now.Add(20 * time.Millisecond))
		c.AttemptDone(now.Add(30*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	fmt.Printf("allowance %.2f\n", p.MeasuredAt(now).WinRateAllowance)
	// Output: allowance 0.05
}

// The adaptive limit sits inside the hedge: each attempt takes a permit, and with none free
// the call fails at once rather than queueing, so the caller can fall back.
func ExampleConfig_limit() {
	p := hedge.MustNew(hedge.Config{Limit: &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := p.NewCall(hedge.CallOptions{})
	first.Start(now)
	second := p.NewCall(hedge.CallOptions{})
	second.Start(now)
	fmt.Println(errors.Is(second.Err(), hedge.ErrLimitExceeded))
	m := p.MeasuredAt(now)
	fmt.Println("limit", m.Limit, "in flight", m.InFlight)
	// Output:
	// true
	// limit 1 in flight 1
}
