package loadpack

import (
	"math"
	"testing"
)

// clamp holds a figure to what its bits can carry, on every platform: 1 << 32 is 0 in a
// 32-bit int, which held every report's queue at -1 there (GOARCH=386 runs this test so).
func TestClampOn32Bit(t *testing.T) {
	for _, tc := range []struct {
		v, bits int
		want    uint64
	}{{-5, 32, 0}, {0, 32, 0}, {7, 32, 7}, {math.MaxInt32, 32, math.MaxInt32}, {70000, 16, 1<<16 - 1}, {math.MaxInt, 32, uint64(min(math.MaxInt, 1<<32-1))}} {
		if got := clamp(tc.v, tc.bits); got != tc.want {
			t.Errorf("clamp(%d, %d) = %d, want %d", tc.v, tc.bits, got, tc.want)
		}
	}
}

// A server of more workers than 16 bits hold reads with its queue and busy workers in the
// same proportion to its workers, not as 65,535 workers all busy under a queue of its own
// length: 40,000 queued at 200,000 workers is a fifth of a request per worker, and clamped
// alone it read as 0.6. Within 16 bits every figure is kept exactly.
func TestPackScalesManyWorkersOn32Bit(t *testing.T) {
	for _, tc := range []struct {
		queued, busy, workers int
		q, b, w               int
	}{
		{3, 10, 16, 3, 10, 16},
		{70000, 65535, 65535, 70000, 65535, 65535},
		{40000, 100000, 200000, 13107, 32767, 65535},
		{1, 0, 1 << 30, 1, 0, 65535},           // a queue scaled down is still a queue
		{0, 1 << 30, 1 << 20, 0, 65535, 65535}, // more busy than workers: all busy
		{math.MaxInt32, 5, math.MaxInt32, 65535, 0, 65535},
		{-4, -1, 70000, 0, 0, 65535},
		{12, 3, 0, 12, 3, 0}, // workers not said
		// Exact at the edges, where a float's rounding was not: all busy stays all busy, a
		// queue of one a worker stays one a worker.
		{0, 65990, 65990, 0, 65535, 65535},
		{65990, 65990, 65990, 65535, 65535, 65535},
		{math.MaxInt32, math.MaxInt, math.MaxInt, int(min(math.MaxInt32*65535/uint64(math.MaxInt)+1, 65535)), 65535, 65535}, // 1 on 64 bits
	} {
		q, b, w := Unpack(Pack(tc.queued, tc.busy, tc.workers))
		if q != tc.q || b != tc.b || w != tc.w {
			t.Errorf("Pack(%d, %d, %d) reads %d queued, %d of %d busy; want %d, %d of %d",
				tc.queued, tc.busy, tc.workers, q, b, w, tc.q, tc.b, tc.w)
		}
	}
}
