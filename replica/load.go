package replica

import (
	"sync/atomic"
	"time"
)

// LoadMaxAge is how long a replica's load report ([Set.ReportLoad]) counts, the same age as
// hedge.LoadMaxAge: a queue drains or builds within a few service times, so an older report
// says nothing of the replica now.
const LoadMaxAge = 300 * time.Millisecond

// loadSlot is one replica's latest load report.
type loadSlot struct {
	at atomic.Int64  // ticks when received, plus one (0 = none)
	v  atomic.Uint64 // queued (32 bits) | workers (32)
}

// ReportLoad records that replica i reported, on a response received at now, queued
// requests waiting for one of its workers. A hedge or a retry (a pick whose call has used a
// replica already) then goes, among the replicas it may pick, to the one with the shortest
// queue reported within [LoadMaxAge], relative to its workers (0 = not said: the queue is
// judged alone); ties go to the fewer attempts outstanding. A copy sent to a replica that can
// start it at once is the one that can beat a straggler; first attempts keep the Balancer's
// choice. Replicas without a fresh report are not preferred or avoided: they compete as if
// their queue were empty only when no replica has a fresh one.
//
// It is safe for concurrent use and allocates only on a Set's first report.
func (s *Set) ReportLoad(now time.Time, i, queued, workers int) {
	if i < 0 || i >= len(s.reps) {
		return
	}
	ls := s.loads.Load()
	if ls == nil {
		fresh := make([]loadSlot, len(s.reps))
		if !s.loads.CompareAndSwap(nil, &fresh) {
			ls = s.loads.Load()
		} else {
			ls = &fresh
		}
	}
	sl := &(*ls)[i]
	sl.v.Store(uint64(min(max(queued, 0), 1<<32-1))<<32 | uint64(min(max(workers, 0), 1<<32-1)))
	sl.at.Store(s.ticks(now) + 1)
}

// leastQueued returns the replica of the tier with the shortest fresh reported queue for a
// pick at tick t, and false when no replica of the tier has a fresh report.
func (s *Set) leastQueued(tier int, t int64, used []int) (int, bool) {
	ls := s.loads.Load()
	if ls == nil || len(used) == 0 {
		return 0, false
	}
	best, bq, bw := -1, 0, 0
	for i := range *ls {
		sl := &(*ls)[i]
		at := sl.at.Load()
		if at == 0 || t-(at-1) >= int64(LoadMaxAge) || s.tier(i, t, used) != tier {
			continue
		}
		v := sl.v.Load()
		q, w := int(v>>32), int(v&(1<<32-1))
		switch l, r := q*max(bw, 1), bq*max(w, 1); {
		case best < 0, l < r:
		case l == r && s.reps[i].outstanding.Load() < s.reps[best].outstanding.Load():
		default:
			continue
		}
		best, bq, bw = i, q, w
	}
	return best, best >= 0
}

// Load returns replica i's latest load report, as [Set.ReportLoad] recorded it, and false
// when it has none received within [LoadMaxAge] of now.
func (s *Set) Load(now time.Time, i int) (queued, workers int, ok bool) {
	ls := s.loads.Load()
	if ls == nil || i < 0 || i >= len(*ls) {
		return 0, 0, false
	}
	sl := &(*ls)[i]
	at := sl.at.Load()
	if at == 0 || s.ticks(now)-(at-1) >= int64(LoadMaxAge) {
		return 0, 0, false
	}
	v := sl.v.Load()
	return int(v >> 32), int(v & (1<<32 - 1)), true
}
