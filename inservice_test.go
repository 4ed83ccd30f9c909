package hedge_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// warm feeds p n sequential 5ms calls ending before at, so its threshold is warm (5ms,
// raised to MinimumDelay), its recent median is 5ms, and no call was ever hedged.
func warm(t *testing.T, p *hedge.Policy, at time.Time, n int) {
	t.Helper()
	now := at.Add(-time.Duration(n) * 10 * time.Millisecond)
	for range n {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(5*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	if m := p.MeasuredAt(at); !m.Warm || m.Threshold != 10*time.Millisecond {
		t.Fatalf("warm-up: %+v", m)
	}
}

type step struct {
	name string
	do   func() []hedge.Action
	want string
}

func runSteps(t *testing.T, steps []step) {
	t.Helper()
	for _, s := range steps {
		if got := actions(s.do()); got != s.want {
			t.Errorf("%s: actions %q, want %q", s.name, got, s.want)
		}
	}
}

// TestRecommendedHedgesOnlyOvertakenCalls: with the recommended configuration and no help
// from the server, a slow first attempt is hedged only once a later call has overtaken it
// (so, in a FIFO server, it is in service) and MinimumInService (10ms) has passed since.
func TestRecommendedHedgesOnlyOvertakenCalls(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	warm(t, p, t0, 20)
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"a starts", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"b starts after a", func() []hedge.Action { return b.Start(ms(1)) }, "start 0, timer 11ms"},
		{"a at the threshold, not overtaken: look again in 5ms", func() []hedge.Action { return a.TimerFired(ms(10)) }, "timer 15ms"},
		{"b answers first: a is in service from 12ms at the latest", func() []hedge.Action {
			return b.AttemptDone(ms(12), 0, hedge.Outcome{})
		}, "finish 0"},
		{"a overtaken 3ms ago: wait until 10ms in service", func() []hedge.Action { return a.TimerFired(ms(15)) }, "timer 22ms"},
		{"a in service for 10ms: hedge", func() []hedge.Action { return a.TimerFired(ms(22)) }, "start 1 hedge"},
		{"the hedge wins", func() []hedge.Action { return a.AttemptDone(ms(27), 1, hedge.Outcome{}) }, "cancel 0, finish 1"},
	})
}

// TestRecommendedNeverHedgesACallNothingOvertook: a client with one call in flight gets no
// evidence that its call is being served, so it does not hedge; it only looks again now and
// then, and the call ends as it would have without hedging. When it ends, the policy says
// why it did not hedge: ReasonNoEvidence, once, in its events and in Measured.
func TestRecommendedNeverHedgesACallNothingOvertook(t *testing.T) {
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
	warm(t, p, t0, 20)
	s.reasons = nil // the warm-up's cold suppressions
	a := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"threshold", func() []hedge.Action { return a.TimerFired(ms(10)) }, "timer 15ms"},
		{"again", func() []hedge.Action { return a.TimerFired(ms(15)) }, "timer 20ms"},
		{"the primary answers", func() []hedge.Action { return a.AttemptDone(ms(200), 0, hedge.Outcome{}) }, "finish 0"},
	})
	if m := p.MeasuredAt(ms(200)); m.HedgesStarted != 0 {
		t.Errorf("%d hedges started", m.HedgesStarted)
	}
	if len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonNoEvidence {
		t.Errorf("suppressions %v, want [no evidence] once the call ended", s.reasons)
	}
	if m := p.MeasuredAt(ms(200)); m.Suppressed[hedge.ReasonNoEvidence] != 1 {
		t.Errorf("Measured().Suppressed = %v, want one %q", m.Suppressed, hedge.ReasonNoEvidence)
	}
	// MinimumInService < 0: the attempt's age alone decides, as before.
	q := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), MinimumInService: -1})
	warm(t, q, t0, 20)
	c := q.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer 10ms"},
		{"threshold: hedge", func() []hedge.Action { return c.TimerFired(ms(10)) }, "start 1 hedge"},
	})
}

// TestBacklogGate: when the recent median latency rises above 1.3 × its lowest (a settled
// estimate), a queue is forming; a hedge, even of a call in service, is suppressed with reason backlog. With
// BacklogRatio < 0 it is not.
func TestBacklogGate(t *testing.T) {
	for _, ratio := range []float64{0, -1} {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), BacklogRatio: ratio, Observer: s.observe})
		warm(t, p, t0, 1100) // the median estimate settles over its first 1024 samples
		s.reasons = nil      // the warm-up's cold suppressions
		// The next second, every call takes 9ms: the recent median moves from 5ms towards
		// 9ms, the threshold (p95 over 30s) stays at its 10ms minimum.
		now := t0
		for range 100 {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(9*time.Millisecond), 0, hedge.Outcome{})
			now = now.Add(10 * time.Millisecond)
		}
		a := p.NewCall(hedge.CallOptions{})
		a.Start(now)
		b := p.NewCall(hedge.CallOptions{})
		b.Start(now.Add(time.Millisecond))
		b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{})
		acts := a.TimerFired(now.Add(12 * time.Millisecond))
		got := actions(acts)
		switch ratio {
		case 0:
			if got != "" || len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonBacklog {
				t.Errorf("default ratio: actions %q, suppressions %v; want none, [backlog]", got, s.reasons)
			}
		default:
			if got != "start 1 hedge" || len(s.reasons) != 0 {
				t.Errorf("gate off: actions %q, suppressions %v; want a hedge", got, s.reasons)
			}
		}
	}
}

// TestStartAwareHedgesOnlyAfterServiceStarts: once the server sends start signals, a first
// attempt is hedged one threshold after its service started, never while it is queued; time
// in the queue does not count.
func TestStartAwareHedgesOnlyAfterServiceStarts(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95)})
	warm(t, p, t0, 20)
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"b starts", func() []hedge.Action { return b.Start(ms(0)) }, "start 0, timer 10ms"},
		{"b in service at once", func() []hedge.Action { return b.AttemptStartedService(ms(0), 0) }, ""},
		{"a starts", func() []hedge.Action { return a.Start(ms(1)) }, "start 0, timer 11ms"},
		{"a queued at its threshold: wait for its signal, no timer", func() []hedge.Action { return a.TimerFired(ms(11)) }, ""},
		{"b answers (a overtaken, but the server's word counts)", func() []hedge.Action {
			return b.AttemptDone(ms(2), 0, hedge.Outcome{})
		}, "finish 0"},
		{"a starts service at 40ms: hedge due 10ms later", func() []hedge.Action { return a.AttemptStartedService(ms(40), 0) }, "timer 50ms"},
		{"a in service for the threshold: hedge", func() []hedge.Action { return a.TimerFired(ms(50)) }, "start 1 hedge"},
		{"a duplicate signal changes nothing", func() []hedge.Action { return a.AttemptStartedService(ms(51), 0) }, ""},
	})
}

// TestStartAwareFallsBackWithoutSignals: a server that sends no start signals gets the
// client-only behaviour of AtQuantile (overtaken calls only).
func TestStartAwareFallsBackWithoutSignals(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95)})
	warm(t, p, t0, 20)
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"a starts", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"b starts", func() []hedge.Action { return b.Start(ms(1)) }, "start 0, timer 11ms"},
		{"b overtakes a", func() []hedge.Action { return b.AttemptDone(ms(3), 0, hedge.Outcome{}) }, "finish 0"},
		{"a at the threshold, in service for 7ms at least", func() []hedge.Action { return a.TimerFired(ms(10)) }, "timer 13ms"},
		{"hedge", func() []hedge.Action { return a.TimerFired(ms(13)) }, "start 1 hedge"},
	})
	// Signals stop: a Window (30s) after the last one the policy falls back again.
	q := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95)})
	warm(t, q, t0, 20)
	s := q.NewCall(hedge.CallOptions{})
	s.Start(ms(0))
	s.AttemptStartedService(ms(0), 0)
	s.AttemptDone(ms(5), 0, hedge.Outcome{})
	late := t0.Add(31 * time.Second)
	a = q.NewCall(hedge.CallOptions{})
	b = q.NewCall(hedge.CallOptions{})
	a.Start(late)
	b.Start(late.Add(time.Millisecond))
	b.AttemptDone(late.Add(2*time.Millisecond), 0, hedge.Outcome{})
	if got := actions(a.TimerFired(late.Add(12 * time.Millisecond))); got != "start 1 hedge" {
		t.Errorf("31s after the last signal: %q, want the client-only hedge", got)
	}
}

// TestTheDefaultWinRateLoopRetreats: with AtQuantile, hedges that keep losing make the
// policy send fewer of them (the default loop, MinimumWinRate 0.3); MinimumWinRate < 0
// turns the loop off.
func TestTheDefaultWinRateLoopRetreats(t *testing.T) {
	for _, floor := range []float64{0, -1} {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), MinimumInService: -1, MinimumWinRate: floor,
			BacklogRatio: -1, Budget: noBudget})
		warm(t, p, t0, 20)
		now := t0
		// Two minutes of calls whose hedges all lose: the primary answers 1ms after the hedge
		// starts.
		for range 2000 {
			c := p.NewCall(hedge.CallOptions{})
			for _, a := range c.Start(now) {
				if a.Kind == hedge.ArmTimer {
					c.TimerFired(a.At)
					c.AttemptDone(a.At.Add(time.Millisecond), 0, hedge.Outcome{})
				}
			}
			now = now.Add(60 * time.Millisecond)
		}
		allowance := p.MeasuredAt(now).WinRateAllowance
		switch {
		case floor == 0 && allowance > 0.1:
			t.Errorf("default loop: allowance %v after two minutes of losing hedges, want the minimum", allowance)
		case floor < 0 && allowance != 1:
			t.Errorf("loop off: allowance %v, want 1", allowance)
		}
	}
}

// TestBacklogGateSeesEveryCallCrossing: when far more calls than 1-q reach their threshold at
// once (the threshold, learnt over 30s, has not caught up with a slowdown), the dependency is
// slow for everyone: the backlog gate suppresses hedges before the median has moved.
func TestBacklogGateSeesEveryCallCrossing(t *testing.T) {
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
	warm(t, p, t0, 20)
	s.reasons = nil
	// 40 calls a millisecond apart, none answering: each crosses its 10ms threshold.
	calls := make([]*hedge.Call, 40)
	for i := range calls {
		if i >= 10 {
			calls[i-10].TimerFired(ms(float64(i)))
		}
		calls[i] = p.NewCall(hedge.CallOptions{})
		calls[i].Start(ms(float64(i)))
	}
	for i := 30; i < 40; i++ {
		calls[i].TimerFired(ms(float64(i + 10)))
	}
	calls[39].AttemptDone(ms(44), 0, hedge.Outcome{}) // overtakes every other call
	if got := actions(calls[0].TimerFired(ms(60))); got != "" {
		t.Errorf("call 0, overtaken 16ms ago: %q, want no hedge", got)
	}
	// Call 39 ended at its threshold before anything overtook it: no evidence. Call 0's
	// hedge meets the backlog.
	if len(s.reasons) != 2 || s.reasons[0] != hedge.ReasonNoEvidence || s.reasons[1] != hedge.ReasonBacklog {
		t.Errorf("suppressions %v, want [no evidence backlog]", s.reasons)
	}
}
