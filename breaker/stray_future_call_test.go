package breaker

import (
	"testing"
	"time"
)

// One call dated far ahead (a bogus timestamp, a clock that jumped for a moment) claims its
// window slot for that far period. Calls at the right time that later fall in the same slot
// must not be dropped as "a full window late" until the clock reaches the stray: that would
// lose a tenth of every window for as long as the stray is ahead (here a year), and the
// ratio rule, ErrorRate and Degraded would read nine tenths of the traffic.
func TestStrayFutureCallDoesNotPoisonItsSlot(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, FailureRatio: -1}) // 10 slots of 1s
	call(b, 0, Success)                                                // anchors at t0
	call(b, 365*24*time.Hour, Success)                                 // the stray, in the slot of 0s, 10s, ...
	// Ten calls a second from 50s to 70s: two windows, the slot of 50s and 60s in each.
	for i := 0; i < 200; i++ {
		call(b, 50*time.Second+time.Duration(i)*100*time.Millisecond, Failure)
	}
	if c, f := b.Counts(at(69*time.Second + 950*time.Millisecond)); c != 100 || f != 100 {
		t.Errorf("Counts over the window 60s-70s = %d calls, %d failures; want 100, 100 (the calls in the stray's slot were dropped)", c, f)
	}
}

// A call a whole window late (or two) finds the present's period in its slot: it is dropped,
// and must not take the slot back as though the present were a stray ahead, even when the
// latest call kept, a moment late itself, is of the period before the present's.
func TestCallAWindowLateKeepsThePresentsSlot(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, FailureRatio: -1}) // 10 slots of 1s
	for i := 0; i < 105; i++ {
		call(b, 60*time.Second+time.Duration(i)*100*time.Millisecond, Failure) // 60s to 70.4s
	}
	call(b, 69*time.Second+990*time.Millisecond, Failure) // a moment late: the latest kept is of second 69
	c0, f0 := b.Counts(at(70*time.Second + 500*time.Millisecond))
	for _, late := range []time.Duration{60*time.Second + 500*time.Millisecond, 50*time.Second + 500*time.Millisecond} {
		call(b, late, Success) // a window and two windows late: the slot of 70s is the present's
		if c, f := b.Counts(at(70*time.Second + 500*time.Millisecond)); c != c0 || f != f0 {
			t.Errorf("after a call at %v: Counts = %d, %d; want %d, %d: it emptied the present's slot", late, c, f, c0, f0)
		}
	}
}
