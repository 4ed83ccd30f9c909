package hedge

import (
	"testing"
	"time"
)

func TestSaturationAfterStrayTime(t *testing.T) {
	var lat time.Duration = 50 * time.Millisecond
	s := &saturation{limit: 5 * time.Millisecond, interval: int64(saturationInterval), probe: func() time.Duration { return lat }}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.check(t0.Add(365 * 24 * time.Hour)) // one stray timestamp while saturated
	lat = 0                               // the process recovers
	busy := false
	for i := 1; i <= 600; i++ { // a minute of checks
		busy = s.check(t0.Add(time.Duration(i) * saturationInterval))
	}
	if busy {
		t.Errorf("still reported saturated a minute after the scheduler latency fell to 0")
	}
}

// stepped is a policy of the quantile trigger (with the backlog gate) and the time a wall
// clock stepped back to: its events so far were stamped an hour later.
func stepped(t *testing.T, trigger Trigger) (*Policy, time.Time) {
	t.Helper()
	p, err := New(Config{Trigger: trigger})
	if err != nil {
		t.Fatal(err)
	}
	return p, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
}

// A start signal stamped before the wall clock stepped back an hour says nothing of the hour
// that follows: signals count within Window either way, and the next signal is kept.
func TestStartSignalsAfterClockStepBack(t *testing.T) {
	p, t0 := stepped(t, StartAware(0.95))
	w := p.est.Config().Window
	p.noteSignal(t0.Add(time.Hour))
	if p.signalled(t0) {
		t.Errorf("a signal stamped an hour ahead counts as arriving now")
	}
	p.noteSignal(t0)
	if !p.signalled(t0.Add(time.Millisecond)) {
		t.Errorf("a signal just received does not count")
	}
	if p.signalled(t0.Add(w + time.Millisecond)) {
		t.Errorf("signals count %v after the last one, with a Window of %v", w+time.Millisecond, w)
	}
}

// A pause for an overload noted before the wall clock stepped back an hour lasts its own
// length from the step, not an hour more.
func TestOverloadPauseAfterClockStepBack(t *testing.T) {
	p, t0 := stepped(t, AtQuantile(0.95))
	p.noteOverload(t0.Add(time.Hour), 2*time.Second) // the cooldown, 5 s, is longer
	if !p.overloaded(t0) {
		t.Fatal("no pause right after an overload")
	}
	if p.overloaded(t0.Add(6 * time.Second)) {
		t.Errorf("a 5 s pause noted before the clock stepped back an hour still holds 6 s after the step")
	}
	p.noteOverload(t0.Add(10*time.Second), time.Minute)
	if !p.overloaded(t0.Add(69*time.Second)) || p.overloaded(t0.Add(71*time.Second)) {
		t.Errorf("a pause of a minute from 10 s after the step: paused at +69 s %v, at +71 s %v; want true, false",
			p.overloaded(t0.Add(69*time.Second)), p.overloaded(t0.Add(71*time.Second)))
	}
}

// A stall stamped before the wall clock stepped back an hour is not one the calls after the
// step ran through, and the next stall replaces it.
func TestStallAfterClockStepBack(t *testing.T) {
	p, t0 := stepped(t, AtQuantile(0.95))
	if p.recent == nil {
		t.Fatal("the default policy keeps no record of stalls")
	}
	p.noteLateness(t0.Add(time.Hour), time.Second)
	if d := p.stalledDuring(t0, 100*time.Millisecond); d != 0 {
		t.Errorf("a call of 100 ms after the step ran through a stall of %v stamped an hour ahead", d)
	}
	p.noteLateness(t0.Add(10*time.Second), 200*time.Millisecond)
	if d := p.stalledDuring(t0.Add(10*time.Second+time.Millisecond), time.Second); d != 200*time.Millisecond {
		t.Errorf("a call through the stall after the step: stalled %v, want 200ms", d)
	}
}

// The lowest recent median seen before the wall clock stepped back more than a period is
// dropped: the minima start again from the step.
func TestBacklogFloorAfterClockStepBack(t *testing.T) {
	b := &backlog{period: int64(10 * time.Second)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.observe(t0.Add(time.Hour), 10*time.Millisecond)
	b.observe(t0, 50*time.Millisecond)
	if f := b.floor(); f != 50*time.Millisecond {
		t.Errorf("the floor after the step: %v, want the 50ms seen since (10ms was an hour ahead)", f)
	}
	b.observe(t0.Add(-time.Second), 40*time.Millisecond) // a caller's time a little behind: the same minima
	if f := b.floor(); f != 40*time.Millisecond {
		t.Errorf("the floor after a median a second behind: %v, want 40ms", f)
	}
}

// Crossings counted in a block begun before the wall clock stepped back are dropped at the
// step: the share is counted again from it, not frozen until the clock catches up.
func TestCrossingsAfterClockStepBack(t *testing.T) {
	x := &crossings{period: int64(time.Second)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := int64(0)
	ahead := t0.Add(time.Hour)
	x.rotate(ahead, calls)
	for range 2 * crossBlock { // every call crossed, an hour ahead
		calls++
		x.crossed(ahead, calls)
	}
	// After the step: 4 blocks of calls of which none cross.
	for i := range 4 * crossBlock {
		calls++
		x.rotate(t0.Add(time.Duration(i)*20*time.Millisecond), calls)
	}
	share, ok := x.share(t0.Add(6*time.Second), calls)
	if !ok || share != 0 {
		t.Errorf("share of crossings after the step: %v (judged %v), want 0: none crossed since", share, ok)
	}
}
