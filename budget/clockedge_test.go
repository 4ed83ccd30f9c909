package budget

import (
	"testing"
	"time"
)

// A single call dated the zero time.Time (an unset field) as the Budget's first: every
// later time is more than 292 years after the anchor, where now.Sub saturates. The budget
// starts over from the first such time; else every real time would fall into one epoch,
// and withdrawals would never leave the window.
func TestZeroTimeAnchorDoesNotFreezeWindow(t *testing.T) {
	b := mustNew(t, Config{Ratio: Zero}) // reserve only: 10 withdrawals per 10s
	b.Balance(time.Time{})               // a reader with an unset time anchors the budget
	now := base
	for i := 0; i < 10; i++ {
		if !b.TryWithdraw(now) {
			t.Fatalf("withdrawal %d refused", i)
		}
	}
	later := now.Add(time.Minute) // six windows later: the reserve is whole again
	if !b.TryWithdraw(later) {
		t.Errorf("a minute after spending the 10s reserve, withdrawal refused; Balance=%v", b.Balance(later))
	}
}

// The same for a stray time more than 292 years ahead as the first time: else every real
// time would saturate to one stale epoch, whose run never spans a Window, and the window
// would never move back.
func TestFarFutureAnchorDoesNotFreezeWindow(t *testing.T) {
	b := mustNew(t, Config{Ratio: Zero})
	b.Balance(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	now := base
	for i := 0; i < 10; i++ {
		if !b.TryWithdraw(now.Add(time.Duration(i) * time.Millisecond)) {
			t.Fatalf("withdrawal %d refused", i)
		}
	}
	later := now.Add(time.Minute)
	if !b.TryWithdraw(later) {
		t.Errorf("a minute after spending the reserve, withdrawal refused; Balance=%v", b.Balance(later))
	}
}
