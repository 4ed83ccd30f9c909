package latency

import (
	"testing"
	"time"
)

// One refresh dated the zero time.Time as the Estimator's first: every later offset would
// saturate, and all samples land in one epoch and never leave the 30s window. The
// estimator starts over from the first time that far from its anchor.
func TestZeroTimeAnchorDoesNotFreezeWindow(t *testing.T) {
	e := mustNew(t, Config{})
	e.Refresh(time.Time{}) // a refresh with an unset time anchors the estimator
	now := base
	for i := 0; i < 100; i++ {
		e.Record(now, time.Millisecond)
	}
	now = now.Add(time.Hour)
	for i := 0; i < 100; i++ {
		e.Record(now, 100*time.Millisecond)
	}
	if n := e.Count(now); n != 100 {
		t.Errorf("Count an hour later = %d, want 100 (the 1ms samples left the 30s window)", n)
	}
	if q, _ := e.Quantile(now, 0.25); q < 50*time.Millisecond {
		t.Errorf("p25 = %v, want ~100ms", q)
	}
}

// The wall clock steps back an hour (times without a monotonic reading: a
// simulator, a clock corrected by NTP) and stays there. Every slot holds an epoch
// newer than every later sample: samples that keep coming that far behind for a whole
// Window are the clock, as the budget takes them, and the window moves back to them.
// Dropped instead until the clock caught up an hour later, they would leave the threshold
// frozen at the old latency.
func TestClockStepBackMovesTheWindow(t *testing.T) {
	e := mustNew(t, Config{Window: 10 * time.Second})
	now := base
	for i := 0; i < 2000; i++ { // 20s of 1ms samples: every slot used
		now = now.Add(10 * time.Millisecond)
		e.Record(now, time.Millisecond)
	}
	now = now.Add(-time.Hour)
	for i := 0; i < 6000; i++ { // a minute of 100ms samples
		now = now.Add(10 * time.Millisecond)
		e.Record(now, 100*time.Millisecond)
	}
	th, ok := e.Threshold()
	t.Logf("Threshold=%v ok=%v Count(now)=%d", th, ok, e.Count(now))
	if th < 50*time.Millisecond {
		t.Errorf("a minute after the clock stepped back 1h, Threshold = %v (ok %v), want ~100ms", th, ok)
	}
}

// Refresh's doc: "A window with fewer than MinimumSamples samples makes Threshold
// report (0, false)", also for a time behind the last warm refresh: after the clock
// steps back, Refresh(now) of an empty window does not keep the old warm threshold.
func TestRefreshEmptyWindowIsCold(t *testing.T) {
	e := mustNew(t, Config{Window: 10 * time.Second})
	now := base
	for i := 0; i < 100; i++ {
		now = now.Add(10 * time.Millisecond)
		e.Record(now, time.Millisecond)
	}
	now = now.Add(-time.Hour)
	e.Refresh(now)
	if d, ok := e.Threshold(); ok || e.Count(now) != 0 {
		t.Errorf("Refresh at a time whose window is empty (Count %d): Threshold = %v, %v; want 0, false", e.Count(now), d, ok)
	}
}
