package breaker

import (
	"testing"
	"time"
)

// A slot's calls and failures are two atomics. A writer that loaded a slot's epoch, was
// preempted between its two adds while another writer rotated the slot to a later period,
// and then added its failure leaves that period with a failure and no call; a read between
// a writer's two adds sees the same. TestConcurrent caught the ErrorRate this gave (2.14):
// every reader must still see failures <= calls, so that ErrorRate stays in [0, 1].
func TestTornSlotKeepsFailuresWithinCalls(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, FailureRatio: -1}) // 10 slots of 1s
	call(b, 0, Success)
	call(b, 0, Success)
	call(b, 0, Success)
	// The torn writes: failures the slot of 0s counts without their calls.
	s := &b.ring[0]
	s.failures.Add(5)
	if r, _ := b.ErrorRate(at(500 * time.Millisecond)); r < 0 || r > 1 {
		t.Errorf("ErrorRate = %v, want it in [0, 1]", r)
	}
	if c, f := b.Counts(at(500 * time.Millisecond)); f > c {
		t.Errorf("Counts = %d calls, %d failures: more failures than calls", c, f)
	}
}
