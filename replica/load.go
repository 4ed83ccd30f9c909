package replica

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/internal/loadpack"
)

// LoadMaxAge is how long a replica's load report ([Set.ReportLoad]) counts, the same age as
// hedge.LoadMaxAge: a queue drains or builds within a few service times, so an older report
// says nothing of the replica now.
const LoadMaxAge = 300 * time.Millisecond

// Load is one replica's report of its own load, as a response carries it (hedgehttp's load
// header, an ORCA per-call or out-of-band report in hedgegrpc).
type Load struct {
	// Queued is how many requests were waiting for a worker.
	Queued int
	// Busy is how many of its Workers were running a request. Workers 0 means the replica
	// did not say: its queue is then judged alone. A replica of more than 65,535 workers is
	// held as 65,535, with Queued and Busy scaled down in proportion (a queue is judged
	// relative to its workers), and [Set.Load] returns its figures so.
	Busy, Workers int
	// Wait is how long the answered request waited for a worker (a per-call report's); 0
	// when it waited for none, or the report says nothing of a request (an out-of-band one).
	Wait time.Duration
}

// loadSlot is one replica's latest load report.
type loadSlot struct {
	at   atomic.Int64  // ticks when received, plus one (0 = none; see stamp)
	v    atomic.Uint64 // queued, busy and workers (loadpack.Pack)
	base atomic.Int64  // the replica's attempts outstanding (Set.Outstanding) at that report
	wait atomic.Int64  // Wait, ns
}

// stamp is loadSlot.at for a report received at tick t: t plus one, so that 0 can mean none.
// It is held below MaxInt64, which ticks reach for a time centuries after the anchor: one
// more would wrap round to the distant past, and a report would come before every other.
// A report received one tick before the anchor is stamped as at it, not as none.
func stamp(t int64) int64 {
	return max(min(t, math.MaxInt64-1)+1, 1)
}

// fresh reports whether the slot holds a report received less than maxAge before tick t, or
// less than maxAge after it (another goroutine's clock read a moment later): a report dated
// further ahead (a clock since stepped back, a bogus time) tells nothing of the load now, and
// would otherwise be fresh for as long as it is ahead. The age saturates (see elapsed): a
// report received centuries before the anchor (at the zero time.Time) is old, not, by a
// subtraction that wrapped round, fresh for ever.
func (sl *loadSlot) fresh(t int64, maxAge time.Duration) bool {
	at := sl.at.Load()
	if at == 0 {
		return false
	}
	age := elapsed(t, at-1)
	return age < int64(maxAge) && age > -int64(maxAge)
}

func (sl *loadSlot) load() (queued, busy, workers int) {
	return loadpack.Unpack(sl.v.Load())
}

// ReportLoad records that replica i reported its load l on a response received at now. A
// report received less than [LoadMaxAge] before the latest one recorded for i is ignored
// (out-of-band reports and per-call ones can arrive out of order); one received longer
// before it replaces it, since the latest is then from before the clock stepped back.
//
// A fresh report routes attempts:
//
//   - A first attempt (a pick whose call has used no replica), with the P2C balancer: of
//     its two candidates, when both reported within [RouteMaxAge] that their answered
//     requests waited for a worker and one waited four times as long as the other, the
//     other; otherwise the one with fewer attempts outstanding, as without reports, and
//     between two with as many, the one with fewer requests at the server relative to its
//     workers (the queued and busy of its report, plus this Set's attempts outstanding there
//     beyond those at the report) when both reported within [RouteMaxAge]. A report counts
//     the other clients' requests, which this Set's own count cannot see, and its wait
//     counts time, which no count does. The other balancers keep their choice.
//   - A hedge or a retry (a pick whose call has used a replica already) goes, among the
//     replicas it may pick, to the one with the shortest queue reported within
//     [LoadMaxAge], relative to its workers; ties go to the fewer attempts outstanding. A
//     copy sent to a replica that can start it at once is the one that can beat a
//     straggler. Replicas without a fresh report are not preferred or avoided: they
//     compete as if their queue were empty only when no replica has a fresh one.
//
// A pool of groups ([NewGroupedPool]) picks by group and weight alone: the reports it is
// given still reach the policy, but do not route its picks.
//
// It is safe for concurrent use and allocates only on a Set's first report. Like every
// method that takes a replica, it panics when i is not one of the Set's (see [Set]).
func (s *Set) ReportLoad(now time.Time, i int, l Load) {
	s.check(i)
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
	at := stamp(s.ticks(now))
	last := sl.at.Load()
	if last != 0 && at < last && elapsed(last, at) < int64(LoadMaxAge) {
		// A report received a moment before the newest one, delivered after it: the newer
		// stands. One dated LoadMaxAge or more before it replaces it: the newest is from
		// before the clock stepped back, or a stray time ahead, and refusing every report
		// until the clock caught up would keep its load for the length of the step.
		return
	}
	sl.v.Store(loadpack.Pack(l.Queued, l.Busy, l.Workers))
	sl.wait.Store(int64(max(l.Wait, 0)))
	if at != last {
		// The same report again (out of band, fed before each pick) keeps its base.
		sl.base.Store(s.reps[i].outstanding.Load())
	}
	sl.at.Store(at)
}

// RouteMaxAge is how old a report may be and still route a first attempt (see
// [Set.ReportLoad]): a queue of a few workers turns over within a few service times, and a
// report much older than that mostly says where this Set has stopped sending (a replica it
// avoided keeps the report that made it look loaded). Copies use reports up to [LoadMaxAge]
// old: a copy goes only to a replica that reported a short queue, which a stale report can
// only delay.
const RouteMaxAge = 100 * time.Millisecond

// lighter reports whether replica b is a better choice than a for a first attempt at tick t:
// the one whose answered request waited far less, when both reports within RouteMaxAge say
// their requests waited (see waitRatio); otherwise fewer attempts outstanding, as P2C has
// always compared them, and between replicas with as many, the lighter report when both
// have one within RouteMaxAge (requests at the server relative to its workers, this Set's
// attempts outstanding there beyond those at the report counted in).
//
// The Set's own count goes before the reports' because it is exact and counts time: a
// replica that has slowed down holds this Set's attempts longer, while a report counts
// requests, and a slow replica's few queued requests wait longer than a fast one's many.
// Among many clients each has nothing outstanding on most replicas most of the time, so the
// reports decide most first attempts all the same. Counts of either kind balance requests,
// not time: a replica that serves four times slower, or whose workers are held by
// stragglers, settles with as many requests as the others and a queue that lasts four times
// as long, or more. The waits the reports carry measure that time, and decide first when
// they differ that much.
func (s *Set) lighter(a, b int, t int64) bool {
	ls := s.loads.Load()
	if ls != nil {
		wa, oka := (*ls)[a].waited(t)
		wb, okb := (*ls)[b].waited(t)
		if oka && okb && wa > 0 && wb > 0 {
			switch {
			case wa >= waitRatio*wb:
				return true
			case wb >= waitRatio*wa:
				return false
			}
		}
	}
	oa, ob := s.reps[a].outstanding.Load(), s.reps[b].outstanding.Load()
	if oa != ob {
		return ob < oa
	}
	if ls == nil {
		return false
	}
	la, wa, oka := (*ls)[a].routing(t, oa)
	lb, wb, okb := (*ls)[b].routing(t, ob)
	return oka && okb && int64(lb)*int64(max(wa, 1)) < int64(la)*int64(max(wb, 1)) // in 64 bits: a 32-bit int overflows at queues of tens of thousands
}

// waitRatio: of two replicas whose latest answered requests both waited for a worker, one
// whose request waited waitRatio times as long as the other's is the heavier, whatever the
// counts say. Below that the counts decide: a wait is one request's, taken when it started,
// and two replicas as fast as each other differ by a factor of two from one request to the
// next. A wait of zero (an idle worker, or an out-of-band report, which carries none) says
// nothing of how long the next request would wait, and leaves the counts to decide.
// Measured (BENCHMARKS.md, "A replica that queues four times longer"): a ratio of 2, or
// letting a wait of zero count, routed worse than the counts alone.
const waitRatio = 4

// waited returns the wait of the latest report, and false when it is older than RouteMaxAge.
func (sl *loadSlot) waited(t int64) (int64, bool) {
	if !sl.fresh(t, RouteMaxAge) {
		return 0, false
	}
	return sl.wait.Load(), true
}

// routing returns the requests at the replica, as far as the Set knows, and its workers, and
// false when its report is older than RouteMaxAge at tick t: the queued and busy of the
// report, plus the attempts outstanding on it now (outstanding) beyond those outstanding when
// it reported, which the report could not count. (Other clients' requests sent since, and any
// request answered since, are unknown until the next report.)
func (sl *loadSlot) routing(t, outstanding int64) (requests, workers int64, ok bool) {
	if !sl.fresh(t, RouteMaxAge) {
		return 0, 0, false
	}
	q, busy, w := sl.load()
	return int64(q) + int64(busy) + max(outstanding-sl.base.Load(), 0), int64(w), true // summed in 64 bits: q+busy in an int of 32 wraps round for a queue near its largest
}

// leastQueued returns the replica of the tier with the shortest fresh reported queue for a
// copy (a pick whose call has used a replica) at tick t, and false when no replica of the
// tier has a fresh report.
func (s *Set) leastQueued(tier int, t int64, used []int) (int, bool) {
	ls := s.loads.Load()
	if ls == nil || len(used) == 0 {
		return 0, false
	}
	best, bq, bw := -1, 0, 0
	for i := range *ls {
		sl := &(*ls)[i]
		if !sl.fresh(t, LoadMaxAge) || s.tier(i, t, used) != tier {
			continue
		}
		q, _, w := sl.load()
		switch l, r := int64(q)*int64(max(bw, 1)), int64(bq)*int64(max(w, 1)); { // 64 bits, as in lighter
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
// when it has none received within [LoadMaxAge] of now. It panics when i is not one of the
// Set's replicas (see [Set]).
func (s *Set) Load(now time.Time, i int) (Load, bool) {
	s.check(i)
	ls := s.loads.Load()
	if ls == nil {
		return Load{}, false
	}
	sl := &(*ls)[i]
	if !sl.fresh(s.ticks(now), LoadMaxAge) {
		return Load{}, false
	}
	q, b, w := sl.load()
	return Load{Queued: q, Busy: b, Workers: w, Wait: time.Duration(sl.wait.Load())}, true
}
