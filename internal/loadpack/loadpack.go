// Package loadpack packs a server's load report (its queue, busy workers and workers) into
// one 64-bit word, so that the core's and replica's boards can store a report with one atomic
// write and read it back whole.
package loadpack

import (
	"math"
	"math/bits"
)

// MostWorkers is the most workers a packed report holds (16 bits).
const MostWorkers = 1<<16 - 1

// Pack is queued (32 bits) | busy (16) | workers (16). Each is held to what its bits hold,
// but a server of more than MostWorkers workers has all three scaled down together, since its
// queue is judged relative to its workers: clamped alone, its workers would read as 65,535
// all busy once more than that many were, and its queue as far too long for them. A queue
// scaled down keeps at least one request (it is still a queue), and busy workers are never
// more than the workers.
func Pack(queued, busy, workers int) uint64 {
	if workers > MostWorkers {
		// In integers, 128 bits wide where a product needs it: a float's rounding read a server
		// of every worker busy as one idle, and a queue of one a worker as one more than that.
		w := uint64(workers)
		hi, lo := bits.Mul64(uint64(min(max(queued, 0), math.MaxInt32)), MostWorkers)
		q, rem := bits.Div64(hi, lo, w) // hi < MostWorkers < w
		if rem != 0 {
			q++ // rounded up
		}
		hi, lo = bits.Mul64(uint64(min(max(busy, 0), workers)), MostWorkers)
		b, _ := bits.Div64(hi, lo, w) // rounded down; busy ≤ workers, so hi < w
		queued, busy, workers = int(q), int(b), MostWorkers
	}
	return clamp(queued, 32)<<32 | clamp(busy, 16)<<16 | clamp(workers, 16)
}

// Unpack is Pack's figures back.
func Unpack(v uint64) (queued, busy, workers int) {
	return int(v >> 32), int(v >> 16 & 0xffff), int(v & 0xffff)
}

// clamp is v held to 0 … 2^bits − 1, in 64 bits: an int of 32 would overflow at 1 << 32.
func clamp(v, bits int) uint64 { return uint64(min(max(int64(v), 0), int64(1)<<bits-1)) }
