package breaker

import (
	"testing"
	"time"
)

// Peek, ErrorRate and Counts are for readers that drive no call (a metrics exporter, the
// hedging core's Measured). A reader whose time is unset passes the zero time.Time, which is
// more than 292 years before a running breaker's anchor. Such a read must change nothing: it
// used to move the anchor, emptying the window (a failing dependency read as healthy, and
// Degraded turned false, so hedging resumed into the failures) and restarting OpenFor, so
// that a breaker read often enough never turned half-open.
func TestZeroTimeReadLeavesWindowAndOpenFor(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, MinimumCalls: 10, FailureRatio: 0.9})
	for i := 0; i < 10; i++ {
		o := Success
		if i%2 == 0 {
			o = Failure
		}
		call(b, time.Duration(i)*time.Millisecond, o)
	}
	if !b.Degraded(at(10 * time.Millisecond)) {
		t.Fatal("half the calls failing: not degraded")
	}
	b.Peek(time.Time{})
	b.ErrorRate(time.Time{})
	b.Counts(time.Time{})
	if c, f := b.Counts(at(10 * time.Millisecond)); c != 10 || f != 5 {
		t.Errorf("after reads at the zero time, Counts = %d, %d; want 10, 5", c, f)
	}
	if !b.Degraded(at(10 * time.Millisecond)) {
		t.Error("after reads at the zero time, no longer degraded")
	}

	// Open for 5s from 1s; an exporter reads the breaker every second with an unset time.
	o := mustNew(t, Config{})
	for i := 0; i < 5; i++ {
		call(o, time.Second, Failure)
	}
	for s := 2; s <= 7; s++ {
		o.Peek(time.Time{})
		o.State(at(time.Duration(s) * time.Second))
	}
	if s := o.State(at(7 * time.Second)); s != HalfOpen {
		t.Errorf("6s after tripping (OpenFor 5s), read at the zero time each second: state %v, want half-open", s)
	}
}
