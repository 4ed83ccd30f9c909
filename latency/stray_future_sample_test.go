package latency

import (
	"testing"
	"time"
)

// One sample dated far ahead (a bad clock, a bogus timestamp) claims its slot for that far
// epoch. Samples at the right time that fall in the same slot must not be dropped as "older
// than the window" until the clock reaches the stray: that would lose one slot width of
// every Window, a sixteenth of all samples, for as long as the stray is ahead (here a year).
func TestStraySampleDoesNotPoisonItsSlot(t *testing.T) {
	e := mustNew(t, Config{Window: 16 * time.Second, MinimumSamples: 1})
	now := base
	e.Record(now, time.Millisecond)
	e.Record(now.Add(365*24*time.Hour), time.Millisecond) // one stray timestamp
	// 100 samples per second for 40 seconds: two and a half Windows.
	for i := 0; i < 4000; i++ {
		now = now.Add(10 * time.Millisecond)
		e.Record(now, time.Millisecond)
	}
	// The window (16 slots of 1s) ending now (40s) holds the samples of 25s to 40s, those
	// of the slot of 32s among them.
	if n := e.Count(now); n != 1501 {
		t.Errorf("Count = %d after 40s of 100 samples/s, want 1501 (15 whole slots of 100 and the one at 40s): the samples of the stray's slot were dropped", n)
	}
}

// A sample a whole Window late (a recorder descheduled, an old time passed in) finds the
// present's epoch in its slot. It is too old and dropped; it must not take the slot back as
// though the present were a stray, even when the latest sample kept, a moment late itself,
// is of the epoch before the present's.
func TestSampleAWindowLateKeepsThePresentsSlot(t *testing.T) {
	e := mustNew(t, Config{Window: 16 * time.Second, MinimumSamples: 1})
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	for ms := 90_000; ms < 100_500; ms += 10 {
		e.Record(at(ms), time.Millisecond)
	}
	e.Record(at(99_990), time.Millisecond) // a moment late: the latest kept is of second 99
	before := e.Count(at(100_500))
	e.Record(at(84_500), time.Millisecond) // a Window late: the slot of second 100 is the present's
	if n := e.Count(at(100_500)); n != before {
		t.Errorf("Count = %d after a sample a Window late, want %d: it emptied the present's slot", n, before)
	}
}
