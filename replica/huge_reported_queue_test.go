package replica

import (
	"math"
	"testing"
	"time"
)

// TestFirstAttemptAvoidsAHugeReportedQueueOn32Bit: a replica that reports the largest queue an int
// holds on a 32-bit platform (ParseLoad and hedgegrpc's loadOf both accept it) is the
// heavier of two candidates, not the lighter. The requests a report counts are its queued
// plus its busy workers, and that sum must not wrap round to a negative count, which would
// send every first attempt to the most loaded replica. Run it with GOARCH=386 as well.
func TestFirstAttemptAvoidsAHugeReportedQueueOn32Bit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(2, Config{Seed: 1}) // P2C: with two replicas both are always the candidates
	if err != nil {
		t.Fatal(err)
	}
	s.ReportLoad(t0, 0, Load{Queued: math.MaxInt32, Busy: 16, Workers: 16})
	s.ReportLoad(t0, 1, Load{Queued: 0, Busy: 1, Workers: 16})
	now := t0.Add(time.Millisecond)
	for range 20 {
		i := s.Pick(now, nil)
		s.Done(now, i, Ignored) // as many outstanding on each: the reports decide
		if i != 1 {
			t.Fatalf("a first attempt went to replica %d, which reported %d queued; want replica 1 (none queued)", i, math.MaxInt32)
		}
	}
}
