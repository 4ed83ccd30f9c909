package latency

import (
	"testing"
	"time"
)

// A single sample dated more than a Window before the samples already held (a late
// report, a clock stepped back) must be dropped and must not turn a warm threshold cold.
func TestStaleSampleColdsThreshold(t *testing.T) {
	e := mustNew(t, Config{Window: 16 * time.Second, MinimumSamples: 20})
	now := base
	for i := 0; i < 100; i++ { // 100 samples over 1s: slots 0 only
		now = now.Add(10 * time.Millisecond)
		e.Record(now, 5*time.Millisecond)
	}
	if _, ok := e.Threshold(); !ok {
		t.Fatal("not warm after 100 samples")
	}
	e.Record(now.Add(-time.Hour-time.Second), 5*time.Millisecond) // one stale sample
	if d, ok := e.Threshold(); !ok {
		t.Errorf("after one stale sample: Threshold() = %v, %v; want the warm threshold (Count(now)=%d)", d, ok, e.Count(now))
	}
}
