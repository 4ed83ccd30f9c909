package breaker

import (
	"testing"
	"time"
)

// A reader that passes the zero time.Time first (ErrorRate, Counts, Peek from an
// exporter with an unset time) anchors the breaker in year 1, and every real time is
// more than 292 years on: the breaker starts over from the first such time. Else each
// would saturate to MaxInt64 ticks, openUntil = tk+OpenFor to the same value, and a
// breaker that trips would be half-open at once.
func TestZeroTimeAnchorStillOpens(t *testing.T) {
	b := mustNew(t, Config{})
	b.Counts(time.Time{})
	for i := 0; i < 5; i++ {
		call(b, time.Second, Failure)
	}
	if err := call(b, time.Second+time.Millisecond, Success); err == nil {
		t.Errorf("breaker that just tripped (OpenFor 5s) admits a call 1ms later; state %v", b.State(at(time.Second+time.Millisecond)))
	}
}

// With the same anchor, failures leave the window: ten failures an hour ago count for
// nothing.
func TestZeroTimeAnchorWindowExpires(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, FailureRatio: -1})
	b.Counts(time.Time{})
	for i := 0; i < 10; i++ {
		call(b, 0, Failure)
	}
	if c, f := b.Counts(at(time.Hour)); c != 0 || f != 0 {
		t.Errorf("Counts an hour later = %d, %d; want 0, 0 (10s window)", c, f)
	}
}

// The wall clock steps back an hour right after the breaker trips: OpenFor runs again
// from the new time, rather than the breaker refusing every call for the hour as well.
func TestClockStepBackReopensForOpenFor(t *testing.T) {
	b := mustNew(t, Config{}) // OpenFor 5s
	for i := 0; i < 5; i++ {
		call(b, time.Hour, Failure)
	}
	if b.State(at(time.Hour)) != Open {
		t.Fatal("not open")
	}
	// The clock now reads an hour earlier (at(0)); a minute passes.
	if err := call(b, 0, Success); err == nil {
		t.Fatal("admitted right after the step back, 0s after tripping")
	}
	if err := call(b, time.Minute, Success); err != nil {
		t.Errorf("a minute after tripping (OpenFor 5s), after the clock stepped back 1h: %v; state %v", err, b.State(at(time.Minute)))
	}
}
