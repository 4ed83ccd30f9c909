package hedge_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
)

// nextReason starts one call at at, fires its hedge timer, and returns the reason of the
// suppression that firing reported (ReasonNone if it reported none). The call then answers.
func nextReason(p *hedge.Policy, s *suppressions, opts hedge.CallOptions, at time.Time) hedge.Reason {
	before := len(s.reasons)
	c := p.NewCall(opts)
	for _, a := range c.Start(at) {
		if a.Kind == hedge.ArmTimer {
			c.TimerFired(a.At)
			c.AttemptDone(a.At.Add(time.Millisecond), 0, hedge.Outcome{})
		}
	}
	if !c.Done() {
		c.Cancel(at.Add(time.Hour), nil)
	}
	if len(s.reasons) == before {
		return hedge.ReasonNone
	}
	return s.reasons[len(s.reasons)-1]
}

// TestGatesAreAskedInOrderPairwise checks the order of docs/design.md, "The gates", one pair
// of neighbouring gates at a time: a call that two gates would refuse is reported under the
// earlier one. TestGatesAreAskedInOrder checks only repeatable and cold before sheddable; the
// order of the others (which reason a dashboard shows, and whether the win-rate loop spends
// its credit on a call a later gate would refuse anyway) was not checked by any test.
func TestGatesAreAskedInOrderPairwise(t *testing.T) {
	t.Run("not repeatable before breaker", func(t *testing.T) {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
			Breaker: &breaker.Config{ConsecutiveFailures: 2, OpenFor: time.Second}, Observer: s.observe})
		failCall(p.NewCall(hedge.CallOptions{}), t0)
		failCall(p.NewCall(hedge.CallOptions{}), t0.Add(100*time.Millisecond))
		at := t0.Add(1500 * time.Millisecond) // half-open: this call is the trial
		if got := nextReason(p, &s, hedge.CallOptions{Repeatable: hedge.NotRepeatable}, at); got != hedge.ReasonNotRepeatable {
			t.Errorf("a half-open trial that is not repeatable: reported %v, want %v", got, hedge.ReasonNotRepeatable)
		}
	})
	t.Run("error rate before cold", func(t *testing.T) {
		var s suppressions
		// MinimumSamples far above the calls made keeps the estimator cold.
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumSamples: 10000}),
			Budget: noBudget, Breaker: &breaker.Config{}, Observer: s.observe})
		now := failFortyPercent(p) // closed, degraded
		if m := p.MeasuredAt(now); m.Warm || m.Breaker != "closed" {
			t.Fatalf("setup: warm %v, breaker %s; want cold and closed", m.Warm, m.Breaker)
		}
		if got := nextReason(p, &s, hedge.CallOptions{}, now); got != hedge.ReasonErrorRate {
			t.Errorf("cold policy, degraded breaker: reported %v, want %v", got, hedge.ReasonErrorRate)
		}
	})
	// A fresh report of a long queue: the backlog gate refuses a hedge.
	long := hedge.Load{Queued: 40, Busy: 4, Workers: 4}
	t.Run("cold before backlog", func(t *testing.T) {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumSamples: 10000}),
			Budget: noBudget, Observer: s.observe})
		p.ReportLoad(t0, 0, long)
		if got := nextReason(p, &s, hedge.CallOptions{}, t0); got != hedge.ReasonCold {
			t.Errorf("cold policy, a long queue reported: reported %v, want %v", got, hedge.ReasonCold)
		}
	})
	t.Run("backlog before budget", func(t *testing.T) {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond),
			Budget: budget.Config{Ratio: budget.Zero, MinPerSecond: budget.Zero}, Observer: s.observe})
		p.ReportLoad(t0, 0, long)
		if got := nextReason(p, &s, hedge.CallOptions{}, t0); got != hedge.ReasonBacklog {
			t.Errorf("empty budget, a long queue reported: reported %v, want %v", got, hedge.ReasonBacklog)
		}
	})
	t.Run("budget before sheddable", func(t *testing.T) {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), NeverHedgeSheddable: true,
			Budget: budget.Config{Ratio: budget.Zero, MinPerSecond: budget.Zero}, Observer: s.observe})
		if got := nextReason(p, &s, hedge.CallOptions{Criticality: hedge.Sheddable}, t0); got != hedge.ReasonBudget {
			t.Errorf("empty budget, sheddable call: reported %v, want %v", got, hedge.ReasonBudget)
		}
	})

	// A policy whose win-rate loop has retreated to its minimum allowance (hedges never win),
	// two minutes after t0.
	retreated := func(t *testing.T, s *suppressions) (*hedge.Policy, time.Time) {
		t.Helper()
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off, BacklogRatio: hedge.Off}),
			Budget: noBudget, NeverHedgeSheddable: true, Observer: s.observe})
		if a := losingHedges(t, p, 1<<30); a > 0.1 {
			t.Fatalf("setup: win-rate allowance %v after two minutes of losing hedges, want the minimum", a)
		}
		return p, t0.Add(121 * time.Second)
	}
	t.Run("sheddable before win rate", func(t *testing.T) {
		var s suppressions
		p, now := retreated(t, &s)
		for i := range 5 {
			if got := nextReason(p, &s, hedge.CallOptions{Criticality: hedge.Sheddable}, now); got != hedge.ReasonSheddable {
				t.Errorf("sheddable call %d, win-rate loop retreated: reported %v, want %v", i, got, hedge.ReasonSheddable)
			}
			now = now.Add(60 * time.Millisecond)
		}
	})
	t.Run("win rate before overload", func(t *testing.T) {
		var s suppressions
		p, now := retreated(t, &s)
		over := p.NewCall(hedge.CallOptions{})
		over.Start(now)
		over.AttemptDone(now.Add(time.Millisecond), 0, hedge.Classify(hedge.MarkOverloaded(errors.New("429"), 0)))
		over.Cancel(now.Add(2*time.Millisecond), nil)
		winRate := 0
		for range 5 { // inside the 5s cool-down
			now = now.Add(60 * time.Millisecond)
			if nextReason(p, &s, hedge.CallOptions{}, now) == hedge.ReasonWinRate {
				winRate++
			}
		}
		if winRate == 0 {
			t.Errorf("5 calls after an overload signal, win-rate loop at its minimum allowance: none reported %v; the overload gate was asked first", hedge.ReasonWinRate)
		}
	})
}
