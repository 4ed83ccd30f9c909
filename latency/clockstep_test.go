package latency

import (
	"testing"
	"time"
)

// One sample dated a year ahead (a bad clock, a bogus timestamp) freezes the
// cached threshold: the refresh schedule moves a year ahead.
func TestThresholdAfterStrayTime(t *testing.T) {
	e := mustNew(t, Config{Window: 10 * time.Second})
	now := base
	for i := 0; i < 200; i++ {
		now = now.Add(10 * time.Millisecond)
		e.Record(now, time.Millisecond)
	}
	e.Record(now.Add(365*24*time.Hour), time.Millisecond) // one stray timestamp
	// The distribution shifts to 100ms for a whole minute of samples.
	for i := 0; i < 6000; i++ {
		now = now.Add(10 * time.Millisecond)
		e.Record(now, 100*time.Millisecond)
	}
	th, ok := e.Threshold()
	q, _ := e.Quantile(now, 0.95)
	t.Logf("Threshold()=%v ok=%v; Quantile(now,0.95)=%v; Count=%d", th, ok, q, e.Count(now))
	if th < 50*time.Millisecond {
		t.Errorf("cached threshold frozen at %v after a minute of 100ms samples", th)
	}
}
