package hedge_test

import (
	"sort"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/winrate"
)

// losingHedges runs two minutes of calls to p, one every 60ms, each hedged at its threshold
// (Adaptive.MinimumInService off) and won by the hedge for one call in every `every`: the rest are won
// by their primary 1ms after the hedge started. It returns the win-rate loop's allowance.
func losingHedges(t *testing.T, p *hedge.Policy, every int) float64 {
	t.Helper()
	warm(t, p, t0, 20)
	now := t0
	for i := range 2000 {
		c := p.NewCall(hedge.CallOptions{})
		for _, a := range c.Start(now) {
			if a.Kind != hedge.ArmTimer {
				continue
			}
			started := has(c.TimerFired(a.At), hedge.StartAttempt)
			winner := 0
			if started && i%every == 0 {
				winner = 1
			}
			c.AttemptDone(a.At.Add(time.Millisecond), winner, hedge.Outcome{})
		}
		now = now.Add(60 * time.Millisecond)
	}
	return p.MeasuredAt(now).WinRateAllowance
}

// The default win-rate loop's floor is 0.3: hedges that win a fifth of their races are
// turned away, hedges that win half of them are not. (A floor ten times lower or higher
// would let the first through, or turn the second away.)
func TestTheDefaultWinRateFloorIsThirtyPercent(t *testing.T) {
	cfg := hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off, BacklogRatio: hedge.Off}), Budget: noBudget}
	if a := losingHedges(t, hedge.MustNew(cfg), 5); a > 0.5 {
		t.Errorf("hedges winning 20%%: allowance %v after two minutes; want the loop to retreat (floor 0.3)", a)
	}
	if a := losingHedges(t, hedge.MustNew(cfg), 2); a != 1 {
		t.Errorf("hedges winning 50%%: allowance %v; want 1 (above the 0.3 floor)", a)
	}
}

// While the recent-median estimate settles (its first samples), it is not a floor for the
// backlog gate: a policy whose first calls were faster than the rest must not read the rise
// as a queue and close hedging for the next minute.
func TestBacklogFloorWaitsForTheMedianToSettle(t *testing.T) {
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget, Observer: s.observe})
	now := t0.Add(-3 * time.Second)
	for i := range 220 { // 20 calls of 2ms, then 200 of 5ms: the estimate is still rising
		d := 5 * time.Millisecond
		if i < 20 {
			d = 2 * time.Millisecond
		}
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(d), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	s.reasons = nil
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	runSteps(t, []step{
		{"a starts", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"b starts", func() []hedge.Action { return b.Start(ms(1)) }, "start 0, timer 11ms"},
		{"b overtakes a", func() []hedge.Action { return b.AttemptDone(ms(2), 0, hedge.Outcome{}) }, "finish 0"},
		{"a in service 8ms at its threshold", func() []hedge.Action { return a.TimerFired(ms(10)) }, "timer 12ms"},
		{"a in service 10ms: hedge", func() []hedge.Action { return a.TimerFired(ms(12)) }, "start 1 hedge"},
	})
	if len(s.reasons) != 0 {
		t.Errorf("suppressions %v; want none while the median settles", s.reasons)
	}
}

// A resend (an attempt that never left replaced by a new one) starts after calls numbered
// later than its call: their answers say nothing of whether the resend is in service, so
// they must not get it hedged.
func TestAResendIsNotHedgedOnItsPredecessorsEvidence(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget})
	warm(t, p, t0, 20)
	a := p.NewCall(hedge.CallOptions{})
	b := p.NewCall(hedge.CallOptions{})
	refused := hedge.Outcome{Class: hedge.Retriable, Unsent: true}
	runSteps(t, []step{
		{"a starts", func() []hedge.Action { return a.Start(ms(0)) }, "start 0, timer 10ms"},
		{"a's attempt never left: resent", func() []hedge.Action { return a.AttemptDone(ms(1), 0, refused) }, "start 1, timer 11ms"},
		{"b starts", func() []hedge.Action { return b.Start(ms(2)) }, "start 0, timer 12ms"},
		{"b answers: it overtook a's call, not its resend", func() []hedge.Action { return b.AttemptDone(ms(3), 0, hedge.Outcome{}) }, "finish 0"},
		{"the resend at its threshold: no evidence, no hedge", func() []hedge.Action { return a.TimerFired(ms(11)) }, ""},
		{"nor later", func() []hedge.Action { return a.TimerFired(ms(30)) }, ""},
	})
}

// crossingShare drives 150 calls 9ms apart (the gate judges a share over at least a second
// and 64 calls), one in `every` of which reaches its threshold unanswered (the others answer
// in 5ms), and then a call in service past its threshold; it returns what that call's timer
// does.
func crossingShare(t *testing.T, every int) (string, []hedge.Reason) {
	t.Helper()
	var s suppressions
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{WinRate: winrate.Config{Floor: hedge.Off}}), Budget: noBudget, Observer: s.observe})
	warm(t, p, t0, 2000) // enough answers that the crossing calls leave the p95 at 10ms
	type ev struct {
		at time.Time
		do func()
	}
	var evs []ev
	for i := range 150 {
		c := p.NewCall(hedge.CallOptions{})
		start := ms(float64(9 * i))
		evs = append(evs, ev{start, func() { c.Start(start) }})
		if i%every == 0 {
			evs = append(evs, ev{start.Add(10 * time.Millisecond), func() { c.TimerFired(start.Add(10 * time.Millisecond)) }},
				ev{start.Add(11 * time.Millisecond), func() { c.AttemptDone(start.Add(11*time.Millisecond), 0, hedge.Outcome{}) }})
		} else {
			evs = append(evs, ev{start.Add(5 * time.Millisecond), func() { c.AttemptDone(start.Add(5*time.Millisecond), 0, hedge.Outcome{}) }})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	for _, e := range evs {
		e.do()
	}
	s.reasons = nil
	a := p.NewCall(hedge.CallOptions{})
	acts := a.Start(ms(1400))
	b := p.NewCall(hedge.CallOptions{})
	b.Start(ms(1401))
	b.AttemptDone(ms(1402), 0, hedge.Outcome{})
	// a has been in service since 1402ms at the latest: follow its timers (its threshold, then
	// the rest of its 10ms in service) until it hedges or stops asking. The sequential calls
	// that crossed their threshold were suppressed with no evidence (nothing overtook them).
	for range 4 {
		k := len(acts) - 1
		if k < 0 || acts[k].Kind != hedge.ArmTimer {
			break
		}
		acts = a.TimerFired(acts[k].At)
	}
	return actions(acts), s.reasons
}

// The backlog gate closes when more than three times 1-q of recent calls reach their
// threshold (the threshold has not caught up with a slowdown), and not at twice.
func TestBacklogGateCrossingShare(t *testing.T) {
	if got, reasons := crossingShare(t, 5); got != "" || len(reasons) != 1 || reasons[0] != hedge.ReasonBacklog {
		t.Errorf("a fifth of calls crossing (4 × 1-q): %q, suppressions %v; want none, [backlog]", got, reasons)
	}
	if got, reasons := crossingShare(t, 10); got != "start 1 hedge" || len(reasons) != 0 {
		t.Errorf("a tenth of calls crossing (2 × 1-q): %q, suppressions %v; want a hedge", got, reasons)
	}
}
