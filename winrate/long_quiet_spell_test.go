package winrate

import (
	"testing"
	"time"
)

// A quiet spell of more than periods+1 periods is closed in one advance, capped at
// periods+1 closes. The closes that matter are the first ones (the periods just after the
// last activity: after periods+1 of them every kept count has left the Window), so they must
// be dated with those periods. Dated with the last periods+1 before now instead, a decision
// the quiet spell's fourth close makes is dated up to the spell's length too late, and
// Winning reports a decision older than a Window as fresh.
func TestLongQuietSpellDatesDecisionByThePeriodItClosed(t *testing.T) {
	setup := func() *Loop {
		l := mustNew(t, Config{}) // Floor 0.1, MinimumSamples 10, period 15s
		l.Allowance(at(0))
		feed(l, 0, 20, 0) // 0 of 20: short of 0.1 by no more than chance: kept
		feed(l, 1, 10, 2) // 2 of 30: still undecided, kept
		return l
	}
	// Quiet from period 2 on. Closing period 4 (at the boundary 4|5) drops period 0 and
	// judges periods 1-4: 2 of 10 won, a winning decision dated period 4. It is within the
	// trailing Window (4 periods) up to period 8, and older from period 9 on.
	if l := setup(); !l.Winning(at(8*period + time.Second)) {
		t.Errorf("Winning false at period 8, 4 periods after a winning decision closed period 4")
	}
	if l := setup(); l.Winning(at(9*period + time.Second)) {
		t.Errorf("Winning true at period 9, 5 periods (more than a Window) after the only winning decision closed period 4")
	}
	l := setup()
	l.Allowance(at(8 * period))
	if l.Winning(at(9*period + time.Second)) {
		t.Errorf("Winning true at period 9 (asked at period 8 before), 5 periods after the decision closed period 4")
	}
}
