package replica

import (
	"testing"
	"time"
)

// The wall clock runs an hour ahead for a second, then steps back. Replica 0 was ejected just
// before the jump, replica 1 during it (its results stamped an hour ahead, when 0's ejection
// had ended, so the bound of one ejected replica in two let it). Back on the right time, 1's
// ejection, ending an hour and more from now, is longer than any ejection made now could be:
// it is not in force. Held, both replicas were out in a Set that must keep one in service,
// and 1 for an hour, past MaxEjection.
func TestEjectionMadeAheadOfAClockStepBack(t *testing.T) {
	s := mustNew(t, 2, Config{Seed: 1})
	for range 5 {
		s.Done(t0, s.Pick(t0, []int{1}), Failure) // replica 0, at t0
	}
	ahead := t0.Add(time.Hour + time.Second)
	for range 5 {
		s.Done(ahead, s.Pick(ahead, []int{0}), Failure) // replica 1, stamped an hour ahead
	}
	if !s.Ejected(ahead, 1) {
		t.Fatalf("replica 1 not ejected at the time its failures were stamped")
	}
	back := t0.Add(2 * time.Second)
	if h := s.Healthy(back); h != 1 {
		t.Errorf("after the clock stepped back, Healthy = %d of 2, want 1; replica 1 ejected until %v after now",
			h, s.Stats(back, 1).Until.Sub(back))
	}
	if !s.Ejected(back, 0) || s.Ejected(back, 1) || s.Stats(back, 1).Ejected {
		t.Errorf("after the step back: ejected %v and %v, want replica 0's ejection alone", s.Ejected(back, 0), s.Ejected(back, 1))
	}
	for range 10 {
		i := s.Pick(back, nil)
		s.Done(back, i, Ignored)
		if i != 1 {
			t.Fatalf("a first attempt went to replica %d, which is ejected: want 1", i)
		}
	}
}
