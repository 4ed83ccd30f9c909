package breaker

import (
	"math"
	"testing"
	"time"
)

// OpenFor = math.MaxInt64 ("stay open until I say so") passes Validate, but
// tk+OpenFor overflows: the breaker that just opened is already half-open.
func TestOpenForForEver(t *testing.T) {
	b := mustNew(t, Config{OpenFor: math.MaxInt64})
	call(b, 0, Success) // anchor at t0
	for i := 0; i < 5; i++ {
		call(b, time.Second, Failure)
	}
	t.Logf("state right after tripping: %v", b.State(at(time.Second)))
	if err := call(b, time.Second+time.Millisecond, Success); err == nil {
		t.Errorf("breaker opened with OpenFor=MaxInt64 admits a call 1ms later (state %v)", b.State(at(2*time.Second)))
	}
}

// Window close to MaxInt64 overflows (Window+slots-1)/slots: the slot width
// goes negative and later calls are dropped from the window.
func TestWindowHuge(t *testing.T) {
	b := mustNew(t, Config{Window: math.MaxInt64, FailureRatio: -1, ConsecutiveFailures: -1})
	t.Logf("width=%d", b.width)
	for i := 0; i < 10; i++ {
		call(b, time.Duration(i)*time.Second, Failure)
	}
	c, f := b.Counts(at(10 * time.Second))
	t.Logf("Counts=%d,%d", c, f)
	if c != 10 {
		t.Errorf("window of ~292 years holds %d of 10 calls made over 10s", c)
	}
}
