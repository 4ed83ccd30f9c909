package hedge_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

// warmTied returns a Tied policy that has seen 20 calls of 5ms, each started at once, ending
// before ms(0): its threshold is MinimumDelay, 10ms.
func warmTied(t *testing.T, cfg hedge.Config) *hedge.Policy {
	t.Helper()
	if cfg.Trigger == (hedge.Trigger{}) {
		cfg.Trigger = hedge.Tied()
	}
	cfg.Budget = noBudget
	p := hedge.MustNew(cfg)
	for i := range 20 {
		at := float64(-1000 + 10*i)
		c := p.NewCall(hedge.CallOptions{})
		c.Start(ms(at))
		c.AttemptStartedService(ms(at), 0)
		c.AttemptDone(ms(at+5), 0, hedge.Outcome{})
	}
	if m := p.MeasuredAt(ms(0)); !m.Warm || m.Threshold != 10*time.Millisecond {
		t.Fatalf("after warming: threshold %v, warm %v; want 10ms", m.Threshold, m.Warm)
	}
	return p
}

type tiedStep struct {
	name string
	do   func(c *hedge.Call) []hedge.Action
	want string
}

func runTiedSteps(t *testing.T, p *hedge.Policy, steps []tiedStep) {
	t.Helper()
	c := p.NewCall(hedge.CallOptions{})
	for _, s := range steps {
		if got := actions(s.do(c)); got != s.want {
			t.Fatalf("%s: %q, want %q", s.name, got, s.want)
		}
	}
}

func started(at float64, k int) func(c *hedge.Call) []hedge.Action {
	return func(c *hedge.Call) []hedge.Action { return c.AttemptStartedService(ms(at), k) }
}

func fired(at float64) func(c *hedge.Call) []hedge.Action {
	return func(c *hedge.Call) []hedge.Action { return c.TimerFired(ms(at)) }
}

func answered(at float64, k int) func(c *hedge.Call) []hedge.Action {
	return func(c *hedge.Call) []hedge.Action { return c.AttemptDone(ms(at), k, hedge.Outcome{}) }
}

func begin(at float64) func(c *hedge.Call) []hedge.Action {
	return func(c *hedge.Call) []hedge.Action { return c.Start(ms(at)) }
}

// TestTiedStateMachine drives Tied's decisions tiedStep by tiedStep: a tie only for a copy still
// queued after TieDelay, the first copy to start cancelling those still queued, and a hedge
// of a copy in service past the threshold.
func TestTiedStateMachine(t *testing.T) {
	t.Run("a copy that starts within TieDelay is never tied", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"it starts: a hedge is due one threshold later", started(0.4, 0), "timer 10.4ms"},
			{"it answers", answered(8, 0), "finish 0"},
		})
	})
	t.Run("a queued copy is tied, and a tie in service too long is hedged", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"still queued after TieDelay: a tie", fired(1), "start 1 hedge"},
			{"the tie starts first: the queued copy is cancelled, a hedge is due", started(3, 1), "cancel 0, timer 13ms"},
			{"the tie is still in service", fired(13), "start 2 hedge"},
			{"the hedge starts: nothing left queued", started(13.5, 2), ""},
			{"the hedge answers", answered(18, 2), "cancel 1, finish 2"},
		})
	})
	t.Run("the first copy starts after its tie was sent", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"tie", fired(1), "start 1 hedge"},
			{"the first copy starts: the tie is cancelled", started(2, 0), "cancel 1, timer 12ms"},
			{"a late start signal of the cancelled tie changes nothing", started(2.5, 1), ""},
			{"it answers before the threshold", answered(9, 0), "finish 0"},
		})
	})
	t.Run("with Attempts 2 a tied call has no attempt left to hedge", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{Attempts: 2}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"tie", fired(1), "start 1 hedge"},
			{"the tie starts", started(3, 1), "cancel 0"},
			{"it answers", answered(40, 1), "finish 1"},
		})
	})
	t.Run("Ties.Delay sets the wait", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: 4 * time.Millisecond})}), []tiedStep{
			{"start", begin(0), "start 0, timer 4ms"},
			{"an early timer does nothing", fired(3), ""},
			{"tie", fired(4), "start 1 hedge"},
		})
	})
	t.Run("Ties.Delay Off ties at once", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off})}), []tiedStep{
			{"start", begin(0), "start 0, start 1 hedge"},
			{"one starts", started(0, 1), "cancel 0, timer 10ms"},
		})
	})
	t.Run("three copies in flight: each tie TieDelay after the last", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{Attempts: 4, MaximumConcurrent: 3}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"first tie", fired(1), "start 1 hedge, timer 2ms"},
			{"second tie", fired(2), "start 2 hedge"},
			{"the second tie starts: both others are cancelled", started(2.5, 2), "cancel 0, cancel 1, timer 12.5ms"},
			{"a hedge of it, the fourth attempt", fired(12.5), "start 3 hedge"},
		})
	})
	t.Run("the copy in service fails: the one still queued is tied again", func(t *testing.T) {
		runTiedSteps(t, warmTied(t, hedge.Config{Attempts: 4, MaximumConcurrent: 3}), []tiedStep{
			{"start", begin(0), "start 0, timer 1ms"},
			{"its start", started(0.5, 0), "timer 10.5ms"},
			{"hedged in service; a third copy is due a threshold later", fired(10.5), "start 1 hedge, timer 20.5ms"},
			{"the copy in service fails: the hedge, queued, gets a tie", func(c *hedge.Call) []hedge.Action {
				return c.AttemptDone(ms(11), 0, hedge.Outcome{Class: hedge.Retriable})
			}, "timer 11.5ms"},
			{"tie", fired(11.5), "start 2 hedge, timer 12.5ms"},
		})
	})
}

// TestTiedColdTiesButDoesNotHedge: before the estimator has a threshold, ties are sent (they
// need none), but a copy in service is not hedged, and the suppression says cold.
func TestTiedColdTiesButDoesNotHedge(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
	runTiedSteps(t, p, []tiedStep{
		{"start", begin(0), "start 0, timer 1ms"},
		{"tie", fired(1), "start 1 hedge"},
		{"the tie starts; no threshold to hedge it by", started(2, 1), "cancel 0"},
		{"it answers", answered(300, 1), "finish 1"},
	})
	m := p.MeasuredAt(ms(300))
	if m.HedgesStarted != 1 || m.Suppressed[hedge.ReasonCold] != 1 {
		t.Errorf("hedges %d, cold suppressions %d; want the tie, and one cold suppression", m.HedgesStarted, m.Suppressed[hedge.ReasonCold])
	}
}

// TestTiedSpendsTheBudget: a tie is a hedge for the budget; without funds the call waits in
// its queue, as without hedging.
func TestTiedSpendsTheBudget(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied()})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	// A new budget holds a few hedges' worth (its floor); spend them on other calls.
	for i := 0; p.MeasuredAt(ms(1)).Budget >= 1 && i < 100; i++ {
		o := p.NewCall(hedge.CallOptions{})
		o.Start(ms(0))
		o.TimerFired(ms(1))
	}
	if got := actions(c.TimerFired(ms(1))); got != "" {
		t.Fatalf("tie with an empty budget: %q, want nothing", got)
	}
	if n := p.MeasuredAt(ms(1)).Suppressed[hedge.ReasonBudget]; n != 1 {
		t.Errorf("budget suppressions %d, want 1", n)
	}
}

// TestTiedDoSendsNoTieWhenTheFirstCopyStartsAtOnce: over Do, an attempt that reports its
// start before TieDelay is the only one the dependency sees.
func TestTiedDoSendsNoTieWhenTheFirstCopyStartsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		var sent atomic.Int32
		script := hedgetest.Script(hedgetest.Answer[string]{Starts: true, StartAfter: 200 * time.Microsecond, After: 30 * time.Millisecond, Value: "only"})
		v, err := hedge.Do(t.Context(), p, func(ctx context.Context) (string, error) {
			sent.Add(1)
			return script(ctx)
		})
		if err != nil || v != "only" || sent.Load() != 1 {
			t.Fatalf("Do = %q, %v with %d attempts; want one attempt", v, err, sent.Load())
		}
	})
}

// TestTiedDoHedgesAStragglerInService: over Do, with a warm policy, a first copy that
// started at once but stays in service is hedged one threshold after its start, and the
// hedge's answer wins.
func TestTiedDoHedgesAStragglerInService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(), Budget: noBudget})
		fast := hedgetest.Script(hedgetest.Answer[string]{Starts: true, After: 5 * time.Millisecond, Value: "fast"})
		for range 20 {
			if _, err := hedge.Do(t.Context(), p, fast); err != nil {
				t.Fatal(err)
			}
		}
		var lg hedge.Log
		v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
			hedgetest.Answer[string]{Starts: true, StartAfter: 300 * time.Microsecond, Stuck: true}, // a straggler
			hedgetest.Answer[string]{Starts: true, After: 4 * time.Millisecond, Value: "hedge"},
		))
		if err != nil || v != "hedge" {
			t.Fatalf("Do = %q, %v; want the hedge's answer", v, err)
		}
		// The hedge left one threshold (10ms) after the straggler's start, not after it was sent.
		if len(lg.Attempts) != 2 || lg.Attempts[0].Index != 1 || lg.Attempts[0].Offset != 10300*time.Microsecond {
			t.Errorf("log = %v, want the hedge sent at 10.3ms", lg)
		}
	})
}
