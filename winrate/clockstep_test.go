package winrate

import (
	"testing"
	"time"
)

// One call dated a year ahead stops every later decision until the clock
// catches up: the allowance freezes, whatever the hedges do.
func TestLoopAfterStrayTime(t *testing.T) {
	l := mustNew(t, Config{})
	// Hedges never win for 4 periods: the allowance falls.
	for p := 0; p < 4; p++ {
		feed(l, p, 100, 0)
	}
	before := l.Allowance(at(4 * period))
	l.Admit(at(365 * 24 * time.Hour)) // one stray timestamp
	// Then hedges win every time, for 40 periods (10 minutes).
	for p := 5; p < 45; p++ {
		feed(l, p, 100, 100)
	}
	after := l.Allowance(at(45 * period))
	t.Logf("allowance before=%v, after 10 minutes of winning hedges=%v, Winning=%v", before, after, l.Winning(at(45*period)))
	if after <= before {
		t.Errorf("allowance stuck at %v", after)
	}
}
