package hedge_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/winrate"
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

// TestRecommendedNeverHedgesACallNothingOvertook: until the policy knows its recent median
// (64 answers), a client with one call in flight gets no evidence that its call is being
// served, so it does not hedge; it only looks again now and then, and the call ends as it
// would have without hedging. When it ends, the policy says why it did not hedge:
// ReasonNoEvidence, once, in its events and in Measured.
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
		t.Errorf("suppressions %v, want [no_evidence] once the call ended", s.reasons)
	}
	if m := p.MeasuredAt(ms(200)); m.Suppressed[hedge.ReasonNoEvidence] != 1 {
		t.Errorf("Measured().Suppressed = %v, want one %q", m.Suppressed, hedge.ReasonNoEvidence)
	}
	// MinimumInService < 0: the attempt's age alone decides, as before.
	q := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off})})
	warm(t, q, t0, 20)
	c := q.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer 10ms"},
		{"threshold: hedge", func() []hedge.Action { return c.TimerFired(ms(10)) }, "start 1 hedge"},
	})
}

// TestRecommendedHedgesASequentialClient: once the policy knows its recent median, a call
// nothing overtook is hedged at its threshold while the median is within 1.1 × its lowest
// (no queue anywhere: a slow call is a straggler), and not while the median has risen
// (a queue may be forming, and only overtaking says a call is past it).
func TestRecommendedHedgesASequentialClient(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	warm(t, p, t0, 100)
	a := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"threshold, median quiet: hedge", func() []hedge.Action { return a.TimerFired(ms(10)) }, "start 1 hedge"},
		{"the hedge wins", func() []hedge.Action { return a.AttemptDone(ms(15), 1, hedge.Outcome{}) }, "cancel 0, finish 1"},
	})
	// 50 calls of 6.5ms, one at a time: the median rises some 20 % (to ~6ms), short of the
	// backlog gate (1.3 ×, and 2.5ms) but past 1.1 × its lowest.
	now := ms(20)
	for range 50 {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(6500*time.Microsecond), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	b := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return b.Start(now) }, "start 0, timer " + (now.Sub(t0) + 10*time.Millisecond).String()},
		{"threshold, median risen, not overtaken: look again", func() []hedge.Action { return b.TimerFired(now.Add(10 * time.Millisecond)) },
			"timer " + (now.Sub(t0) + 15*time.Millisecond).String()},
	})
}

// TestBacklogGate: when the recent median latency rises above 1.3 × its lowest, and by at
// least MinimumDelay/4, a queue is forming; a hedge, even of a call in service, is suppressed with reason backlog. With
// BacklogRatio < 0 it is not.
func TestBacklogGate(t *testing.T) {
	for _, ratio := range []float64{0, -1} {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{BacklogRatio: ratio}), Observer: s.observe})
		warm(t, p, t0, 100)
		s.reasons = nil // the warm-up's cold suppressions
		// The next 1.5s, every call takes 9ms: the recent median moves from 5ms to 9ms, the
		// threshold (p95 over 30s) stays at its 10ms minimum.
		now := t0
		for range 150 {
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
		a.TimerFired(now.Add(10 * time.Millisecond)) // at the threshold: in service for 8ms only
		// On time (a timer fired late says the client is slow, which asks more evidence).
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
	a.TimerFired(late.Add(10 * time.Millisecond))
	if got := actions(a.TimerFired(late.Add(12 * time.Millisecond))); got != "start 1 hedge" {
		t.Errorf("31s after the last signal: %q, want the client-only hedge", got)
	}
}

// TestTheDefaultWinRateLoopRetreats: with AtQuantile, hedges that keep losing make the
// policy send fewer of them (the default loop, WinRate.Floor 0.3); WinRate.Floor Off turns
// the loop off.
func TestTheDefaultWinRateLoopRetreats(t *testing.T) {
	for _, floor := range []float64{0, -1} {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off,
			WinRate: winrate.Config{Floor: floor}, BacklogRatio: hedge.Off}), Budget: noBudget})
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

// TestBacklogGateSeesEveryCallCrossing: when far more calls than 1-q reach their threshold
// (the threshold, learnt over 30s, has not caught up with a slowdown), the dependency is slow
// for everyone: the backlog gate suppresses hedges before the median has moved. The share is
// judged over at least a second and 64 calls.
func TestBacklogGateSeesEveryCallCrossing(t *testing.T) {
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
	warm(t, p, t0, 20)
	s.reasons = nil
	// 120 calls 10ms apart, each answering after 15ms: the first ones cross their 10ms
	// threshold, until the threshold has learnt the new latency.
	for i := range 120 {
		c := p.NewCall(hedge.CallOptions{})
		at := float64(10 * i)
		c.Start(ms(at))
		c.TimerFired(ms(at + 10))
		c.AttemptDone(ms(at+15), 0, hedge.Outcome{})
	}
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	a.Start(ms(1200))
	b.Start(ms(1201))
	b.AttemptDone(ms(1202), 0, hedge.Outcome{}) // overtakes a
	// a's threshold is the p95 of the last 30s, a little over 15ms (which later calls
	// no longer crossed: the share that did is about a quarter).
	if got := actions(a.TimerFired(ms(1216))); got != "" {
		t.Errorf("call a, overtaken 14ms ago: %q, want no hedge", got)
	}
	// The sequential calls that crossed their threshold ended with no evidence that they were
	// in service (nothing overtook them, and the median had moved off its lowest); a's hedge,
	// which had that evidence, meets the backlog, and only it.
	n := len(s.reasons)
	if n == 0 || s.reasons[n-1] != hedge.ReasonBacklog {
		t.Fatalf("suppressions %v, want call a's backlog last", s.reasons)
	}
	for _, r := range s.reasons[:n-1] {
		if r != hedge.ReasonNoEvidence {
			t.Errorf("suppressions %v: the sequential calls' must all be %v", s.reasons, hedge.ReasonNoEvidence)
			break
		}
	}
}

// TestBacklogGateLooksPastABusyClient: a busy client's median rises with its own delay, and
// its timers fire late by the same cause. The backlog gate reads the rise beyond 16 × the
// timers' lateness: calls that took 5ms take 11ms and their threshold timers fire 0.5ms late,
// as on a client short of CPU, and a hedge of an overtaken call still goes out, where the
// same rise with timers on time is a backlog (TestBacklogGate).
func TestBacklogGateLooksPastABusyClient(t *testing.T) {
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
	warm(t, p, t0, 100)
	s.reasons = nil
	now := t0
	for range 150 { // 1.5s of calls of 11ms, one at a time
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.TimerFired(now.Add(10*time.Millisecond + 500*time.Microsecond)) // its threshold, late
		c.AttemptDone(now.Add(11*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(20 * time.Millisecond)
	}
	// None of them is taken for a backlog. (The first few, answered before the policy has
	// learnt how late its timers fire, look slow, so the quiet-median evidence waits for them:
	// no_evidence.)
	for _, r := range s.reasons {
		if r != hedge.ReasonNoEvidence {
			t.Fatalf("suppressions %v while the client was busy", s.reasons)
		}
	}
	s.reasons = nil
	a := p.NewCall(hedge.CallOptions{})
	a.Start(now)
	b := p.NewCall(hedge.CallOptions{})
	b.Start(now.Add(time.Millisecond))
	b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{}) // overtakes a
	// The threshold is the p95 of the last 30s, 11ms; a has been in service since 2ms at the
	// latest, and a busy client asks 10ms plus its timers' lateness (0.5ms).
	a.TimerFired(now.Add(11*time.Millisecond + 500*time.Microsecond))
	got := actions(a.TimerFired(now.Add(13 * time.Millisecond)))
	if got != "start 1 hedge" || len(s.reasons) != 0 {
		t.Errorf("busy client, median up 6ms: actions %q, suppressions %v; want the hedge", got, s.reasons)
	}
}

// TestQuietMedianNeedsQuietAnswers: a call nothing could have overtaken is hedged on its age
// while the recent median is at its lowest, but not when most of the latest answers were slow:
// a client with a thin share of the traffic moves its median only over hundreds of answers, and
// the latest few are what show a queue its peers and it are building.
func TestQuietMedianNeedsQuietAnswers(t *testing.T) {
	run := func(t *testing.T, slowTail int) string {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget})
		now := warmWithStragglers(p, t0.Add(-5*time.Second))
		answer := func(d time.Duration) {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(d), 0, hedge.Outcome{})
			now = now.Add(20 * time.Millisecond)
		}
		for i := range 8 {
			d := 5 * time.Millisecond
			if i < slowTail {
				d = 25 * time.Millisecond // slow, and under the threshold: no hedge was due
			}
			answer(d)
		}
		c := p.NewCall(hedge.CallOptions{})
		acts := c.Start(now)
		at := acts[len(acts)-1].At
		return actions(c.TimerFired(at))
	}
	if got := run(t, 0); got != "start 1 hedge" {
		t.Errorf("the latest answers quiet: %q, want the hedge", got)
	}
	if got := run(t, 6); got == "start 1 hedge" {
		t.Errorf("six of the latest eight answers slow: %q, want no hedge", got)
	}
}

// TestQuietMedianLooksPastARescuedStraggler: the loser of a call whose hedge won quickly is a
// straggler, not evidence of a queue (the copy, sent later, answered first): its censored
// sample feeds the estimator, but does not count as a slow answer, so the next straggler of a
// client with one call in flight is hedged on the quiet median as the first was. A hedge that
// itself answers slowly does count (TestQuietMedianNeedsQuietAnswers' rule).
func TestQuietMedianLooksPastARescuedStraggler(t *testing.T) {
	run := func(t *testing.T, hedgeTook time.Duration) string {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget})
		now := t0.Add(-5 * time.Second)
		for i := range 208 {
			d := 5 * time.Millisecond
			if i%10 == 9 && i < 200 {
				d = 30 * time.Millisecond // the p95 sits at 30ms
			}
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(d), 0, hedge.Outcome{})
			now = now.Add(20 * time.Millisecond)
		}
		straggler := func() string {
			c := p.NewCall(hedge.CallOptions{})
			acts := c.Start(now)
			at := acts[len(acts)-1].At
			got := actions(c.TimerFired(at))
			if got == "start 1 hedge" {
				c.AttemptDone(at.Add(hedgeTook), 1, hedge.Outcome{})
			} else {
				c.AttemptDone(at.Add(100*time.Millisecond), 0, hedge.Outcome{})
			}
			now = now.Add(200 * time.Millisecond)
			return got
		}
		if got := straggler(); got != "start 1 hedge" {
			t.Fatalf("first straggler: %q, want the hedge", got)
		}
		return straggler()
	}
	if got := run(t, 5*time.Millisecond); got != "start 1 hedge" {
		t.Errorf("after a straggler whose hedge answered in 5ms: %q, want the hedge", got)
	}
	if got := run(t, 25*time.Millisecond); got == "start 1 hedge" {
		t.Errorf("after a hedge that answered slowly (25ms): %q, want no hedge", got)
	}
}

// warmWithStragglers feeds p 200 sequential calls from start, one every 20ms, of 5ms but every
// tenth of 30ms (its p95 then), and returns when the next one would start.
func warmWithStragglers(p *hedge.Policy, start time.Time) time.Time {
	return warmOn(p, start, 5*time.Millisecond)
}

// warmOn is warmWithStragglers with calls of base instead of 5ms.
func warmOn(p *hedge.Policy, start time.Time, base time.Duration) time.Time {
	now := start
	for i := range 200 {
		d := base
		if i%10 == 9 {
			d = 30 * time.Millisecond
		}
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(d), 0, hedge.Outcome{})
		now = now.Add(20 * time.Millisecond)
	}
	return now
}

// TestBacklogGateSeesSlowAnswers: with the recent median still at its lowest, a call that a
// later one overtook is hedged when fewer than half of the policy's last eight answers were
// slow, and suppressed with reason backlog when half or more were: a client with a thin share
// of a fleet's traffic sees a queue in its latest answers long before its median moves. A call
// whose first attempt waits on a replica that has answered nothing since it was sent (while
// another answered) is not held by answers from the replicas that do answer: it is hedged
// once lost.
//
// An answer is slow for this only when it rose by a quarter of MinimumDelay or more, as the
// median must: calls that take a millisecond, most of it the client's own, rise by as much
// whenever the client is busy, and a queue that short cannot cost a copy its race against a
// straggler anyway.
func TestBacklogGateSeesSlowAnswers(t *testing.T) {
	run := func(t *testing.T, slowTail int, silent bool) (string, []hedge.Reason) {
		return slowAnswersGate(t, 5*time.Millisecond, 25*time.Millisecond, slowTail, silent)
	}
	// b's quick answer is the newest of the eight: the slow ones are the seven before it.
	if got, r := run(t, 3, false); got != "start 1 hedge" || len(r) != 0 {
		t.Errorf("3 of the last 8 answers slow: actions %q, suppressions %v; want the hedge", got, r)
	}
	if got, r := run(t, 4, false); got != "" || len(r) != 1 || r[0] != hedge.ReasonBacklog {
		t.Errorf("4 of the last 8 answers slow: actions %q, suppressions %v; want none, [backlog]", got, r)
	}
	if got, r := run(t, 4, true); got != "start 1 hedge" || len(r) != 0 {
		t.Errorf("4 of the last 8 slow, first attempt on a silent replica: actions %q, suppressions %v; want the hedge", got, r)
	}
	// Calls of 1ms (the threshold is MinimumDelay's 10ms): 7 of the last 8 answers rose by
	// 2ms, more than twice the lowest median, and by 3ms.
	if got, r := slowAnswersGate(t, time.Millisecond, 3*time.Millisecond, 7, false); got != "start 1 hedge" || len(r) != 0 {
		t.Errorf("calls of 1ms, 7 of the last 8 answers 2ms slower: actions %q, suppressions %v; want the hedge", got, r)
	}
	if got, r := slowAnswersGate(t, time.Millisecond, 4*time.Millisecond, 4, false); got != "" || len(r) != 1 || r[0] != hedge.ReasonBacklog {
		t.Errorf("calls of 1ms, 4 of the last 8 answers 3ms slower: actions %q, suppressions %v; want none, [backlog]", got, r)
	}
}

// slowAnswersGate warms a policy with calls of fast (one in ten of 30ms, its p95), answers
// eight more, the last slowTail of them taking slow, then starts call a and a later call that
// overtakes it, and returns a's actions at its threshold (30ms) and the suppressions. silent:
// the later call went to another replica, and a's has answered nothing since a was sent.
func slowAnswersGate(t *testing.T, fast, slow time.Duration, slowTail int, silent bool) (string, []hedge.Reason) {
	t.Helper()
	{
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget, Observer: s.observe})
		now := warmOn(p, t0.Add(-5*time.Second), fast)
		answer := func(d time.Duration) {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(d), 0, hedge.Outcome{})
			now = now.Add(20 * time.Millisecond)
		}
		for i := range 8 {
			d := fast
			if i >= 8-slowTail {
				d = slow // slow, and under the threshold: no hedge was due
			}
			answer(d)
		}
		s.reasons = nil
		set, err := replica.New(2, replica.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		set.Report(now.Add(-time.Millisecond), 0, replica.Success)
		set.Report(now.Add(-time.Millisecond), 1, replica.Success)
		var route hedge.Route
		a := p.NewCall(hedge.CallOptions{})
		a.Start(now)
		a.AttemptRoute(0, &route)
		route.To(set, 0)
		b, rb := p.NewCall(hedge.CallOptions{}), new(hedge.Route)
		b.Start(now.Add(time.Millisecond))
		b.AttemptRoute(0, rb)
		if silent {
			rb.To(set, 1)
		} else {
			rb.To(set, 0) // answered from a's replica: a is in service
		}
		b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{}) // overtakes a; quick
		set.Report(now.Add(2*time.Millisecond), 1, replica.Success)
		if !silent {
			set.Report(now.Add(3*time.Millisecond), 0, replica.Success) // a's replica answers too
		}
		got := actions(a.TimerFired(now.Add(30 * time.Millisecond))) // the threshold; in service 28ms
		if lost := now.Add(4 * p.MeasuredAt(now).Threshold); silent && got == "timer "+lost.Sub(t0).String() {
			// Silent since a was sent, its replica can show nothing of a: a waits until it is
			// lost, four thresholds after it was sent (Call.lost).
			got = actions(a.TimerFired(lost))
		}
		return got, s.reasons
	}
}

// TestBacklogGateLooksPastAStall: answers slowed together by a stall of the client itself
// (a garbage collection, the machine taking its CPUs), which its timers show by firing late,
// are no backlog; the same answers with the client's timers on time are.
func TestBacklogGateLooksPastAStall(t *testing.T) {
	// run warms a policy (the p95 at 30ms, the median 5ms), starts call a and a later call
	// that overtakes it (a is in service), and five calls at 10ms (ms after a started), which
	// answer at 10+took. When late > 0, another call's timer fires late by late at stallAt: a
	// stall of the client that ended then. a's timer, due at 30ms, fires at fire; run returns
	// a's actions then and the suppressions.
	run := func(t *testing.T, stallAt, late, took, fire float64) (string, []hedge.Reason) {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget, Observer: s.observe})
		now := warmWithStragglers(p, t0.Add(-5*time.Second))
		at := func(msAfter float64) time.Time { return now.Add(time.Duration(msAfter * float64(time.Millisecond))) }
		a := p.NewCall(hedge.CallOptions{})
		a.Start(now)
		b := p.NewCall(hedge.CallOptions{})
		b.Start(at(1))
		b.AttemptDone(at(2), 0, hedge.Outcome{})
		var slow []*hedge.Call
		for range 5 {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(at(10))
			slow = append(slow, c)
		}
		if late > 0 {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(at(stallAt - late - 30)) // its timer is due 30ms after it started
			c.TimerFired(at(stallAt))
		}
		for _, c := range slow {
			c.AttemptDone(at(10+took), 0, hedge.Outcome{})
		}
		s.reasons = nil
		return actions(a.TimerFired(at(fire))), s.reasons
	}
	backlog := func(got string, r []hedge.Reason) bool {
		return got == "" && len(r) == 1 && r[0] == hedge.ReasonBacklog
	}
	// Five answers of 18ms (slow: over twice the median's lowest) with the timers on time.
	if got, r := run(t, 0, 0, 18, 30); !backlog(got, r) {
		t.Fatalf("5 slow answers, timers on time: actions %q, suppressions %v; want none, [backlog]", got, r)
	}
	// The client stalled from 30 to 39ms: the answers, due at 28ms, were received at 38.5ms,
	// before a's timer woke 9ms late.
	if got, r := run(t, 0, 0, 28.5, 39); got != "start 1 hedge" || len(r) != 0 {
		t.Errorf("5 answers slowed by a stall a's own timer shows: actions %q, suppressions %v; want the hedge", got, r)
	}
	// A late timer with no slow answer noted in its stall clears nothing.
	if got, r := run(t, 0, 0, 18, 33); !backlog(got, r) {
		t.Errorf("5 slow answers before a stall of 3ms: actions %q, suppressions %v; want none, [backlog]", got, r)
	}
	// Another call's timer showed the stall (10ms late at 27ms); the answers of the calls that
	// ran through it arrive after, at 28ms, slow by no more than it. a's timer is on time.
	if got, r := run(t, 27, 10, 18, 30); got != "start 1 hedge" || len(r) != 0 {
		t.Errorf("5 answers slowed by a stall another timer showed: actions %q, suppressions %v; want the hedge", got, r)
	}
	// A stall that ended before the slow calls started explains none of them.
	if got, r := run(t, 9, 5, 18, 30); !backlog(got, r) {
		t.Errorf("5 slow answers after a stall that ended before they started: actions %q, suppressions %v; want none, [backlog]", got, r)
	}
}
