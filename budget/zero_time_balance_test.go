package budget

import (
	"testing"
	"time"
)

// Balance is a read (a metrics exporter, the hedging core's Measured). A reader whose time is
// unset passes the zero time.Time, more than 292 years before a running budget's base. The
// read must not move the base: that emptied the window, and the next real time moved it
// back, emptying it again, so every such read forgave every withdrawal of the window and
// handed out a fresh reserve (here ten more hedges per read, a storm where the budget
// exists to stop one).
func TestZeroTimeBalanceDoesNotRefill(t *testing.T) {
	b := mustNew(t, Config{Ratio: Zero}) // reserve only: 10 withdrawals per 10s
	now := base
	for i := 0; i < 10; i++ {
		if !b.TryWithdraw(now) {
			t.Fatalf("withdrawal %d refused", i)
		}
	}
	if b.TryWithdraw(now) {
		t.Fatal("an 11th withdrawal within the window granted")
	}
	granted := 0
	for i := 0; i < 5; i++ {
		b.Balance(time.Time{})
		if b.TryWithdraw(now.Add(time.Duration(i) * time.Millisecond)) {
			granted++
		}
	}
	if granted != 0 {
		t.Errorf("with the reserve spent, %d of 5 withdrawals granted, each after a Balance read at the zero time; want 0 (Balance(now) = %v)", granted, b.Balance(now))
	}
}
