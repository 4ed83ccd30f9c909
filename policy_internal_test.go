package hedge

import (
	"math"
	"testing"
	"time"
)

func TestYieldIsLearntPerPolicy(t *testing.T) {
	p := MustNew(Config{Trigger: After(1)})
	if !p.yieldPays(1) {
		t.Fatal("a new policy does not try yielding")
	}
	for range 20 {
		p.yielded(false) // the answer was never ready: an I/O-bound dependency
	}
	if p.yieldPays(1) || p.yieldPays(63) {
		t.Fatal("still yielding after 20 yields that did not pay")
	}
	if !p.yieldPays(64) {
		t.Fatal("never probes again: one call in 64 should")
	}
	for range 20 {
		p.yielded(true)
	}
	if !p.yieldPays(1) || p.yieldScore.Load() != yieldScoreBound {
		t.Fatalf("after yields that paid: score %d, want %d and yielding", p.yieldScore.Load(), yieldScoreBound)
	}
}

func TestSchedulerProbeReadsRuntimeMetrics(t *testing.T) {
	probe := newSchedulerProbe()
	probe() // the first reading is against nothing
	done := make(chan struct{})
	for range 100 { // give the scheduler something to measure
		go func() { done <- struct{}{} }()
	}
	for range 100 {
		<-done
	}
	if d := probe(); d < 0 || d > time.Hour {
		t.Fatalf("scheduler latency p99 = %v, want a duration in [0, 1h]", d)
	}
}

// clampBits holds a figure to what its bits can carry, on every platform: 1 << 32 is 0 in a
// 32-bit int, which held every report's queue at -1 there (GOARCH=386 runs this test so).
func TestClampBits(t *testing.T) {
	for _, tc := range []struct {
		v, bits int
		want    uint64
	}{{-5, 32, 0}, {0, 32, 0}, {7, 32, 7}, {math.MaxInt32, 32, math.MaxInt32}, {70000, 16, 1<<16 - 1}, {math.MaxInt, 32, uint64(min(math.MaxInt, 1<<32-1))}} {
		if got := clampBits(tc.v, tc.bits); got != tc.want {
			t.Errorf("clampBits(%d, %d) = %d, want %d", tc.v, tc.bits, got, tc.want)
		}
	}
}
