package hedge

import (
	"testing"
	"time"
)

func TestSaturationAfterStrayTime(t *testing.T) {
	var lat time.Duration = 50 * time.Millisecond
	s := &saturation{limit: 5 * time.Millisecond, interval: int64(saturationInterval), probe: func() time.Duration { return lat }}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.check(t0.Add(365 * 24 * time.Hour)) // one stray timestamp while saturated
	lat = 0                               // the process recovers
	busy := false
	for i := 1; i <= 600; i++ { // a minute of checks
		busy = s.check(t0.Add(time.Duration(i) * saturationInterval))
	}
	if busy {
		t.Errorf("still reported saturated a minute after the scheduler latency fell to 0")
	}
}
