package winrate

import (
	"testing"
	"time"
)

// A first call dated the zero time.Time anchors the loop in year 1: every real time would
// saturate to one period index, and no period would ever close. The loop starts over from
// the first time that far from its anchor, and the allowance moves.
func TestZeroTimeAnchorDoesNotFreezeLoop(t *testing.T) {
	l := mustNew(t, Config{})
	l.Allowance(time.Time{})
	for p := 0; p < 8; p++ {
		feed(l, p, 100, 0) // hedges never win
	}
	if a := l.Allowance(at(8 * period)); a == 1 {
		t.Errorf("allowance = %v after 8 periods of 100 losing hedges each, want < 1", a)
	}
}

// The clock steps back more than a Window to before the anchor: the loop takes the
// new time as the present (cur = idx < 0), and times before the anchor fall in periods
// of their own (floor division): counted in that one period, no decision would be made
// until the clock passed the anchor again (an hour here).
func TestClockBackBeforeAnchorDecides(t *testing.T) {
	l := mustNew(t, Config{})
	l.Allowance(at(0)) // anchor
	back := -time.Hour
	for p := 0; p < 8; p++ {
		s := back + time.Duration(p)*period
		for i := 0; i < 100; i++ {
			l.Started(at(s + time.Duration(i)*time.Millisecond))
		}
	}
	if a := l.Allowance(at(back + 8*period)); a == 1 {
		t.Errorf("allowance = %v after 8 periods (2 min) of 100 losing hedges each, after the clock stepped back 1h; want < 1", a)
	}
}

// The same sequence after the anchor: the loop decides, as the two tests above now do too.
func TestLoopDecidesAfterAnchor(t *testing.T) {
	l := mustNew(t, Config{})
	l.Allowance(at(0))
	for p := 0; p < 8; p++ {
		feed(l, p, 100, 0)
	}
	if a := l.Allowance(at(8 * period)); a == 1 {
		t.Errorf("control: allowance = %v", a)
	}
}

// After the clock steps back (still after the anchor), the loop resets its counts and
// its decision: a kept won/wonAt would say Winning, with no decision made, until the
// clock came back to where it was (300 periods here), not for one Window.
func TestClockBackForgetsWinning(t *testing.T) {
	l := mustNew(t, Config{})
	l.Allowance(at(0))
	for p := 396; p < 400; p++ {
		feed(l, p, 100, 100) // hedges win
	}
	if !l.Winning(at(400 * period)) {
		t.Fatal("not winning")
	}
	// The clock steps back to period 100, and 10 periods pass without a hedge.
	l.Allowance(at(100 * period))
	if l.Winning(at(110 * period)) {
		t.Errorf("Winning true 10 periods (2.5 Windows) without any decision, after the clock stepped back")
	}
}

// A decision made on a later close of one advance (several periods closed at once) is
// dated with the period it closed, not the one the batch started from: else Winning
// would expire up to three periods early.
func TestDecisionDatedByThePeriodItClosed(t *testing.T) {
	l := mustNew(t, Config{}) // Floor 0.1, MinimumSamples 10, period 15s
	l.Allowance(at(0))
	feed(l, 0, 20, 0) // 0 of 20: short of 0.1, by no more than chance: kept
	feed(l, 1, 10, 2) // 2 of 30: still undecided, kept
	l.Allowance(at(2 * period))
	// Quiet until period 6: the boundary 4|5 drops period 0 and judges periods 1-4:
	// 2 of 10 won, at least Floor: a winning decision closing period 4.
	if !l.Winning(at(6 * period)) {
		t.Fatal("not winning at period 6")
	}
	if !l.Winning(at(7*period + time.Second)) {
		t.Errorf("Winning false at period 7, 3 periods after a winning decision closed period 4 (Window = 4 periods)")
	}
}
