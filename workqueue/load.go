package workqueue

import (
	"time"
)

// Load is a queue's state as a server reports it on a response, so that its clients can tell
// a request that is slow in service (a straggler, worth a hedge) from one that waits behind
// others (a backlog, where a copy only waits too), and send a copy to the replica that can
// start it soonest. Every client of a server sees only its own calls; the server's queue sees
// all of them.
type Load struct {
	// Queued is how many requests wait for a worker, both lanes.
	Queued int
	// Busy is how many workers are running a request (the reporting one among them, when the
	// report is made while its handler runs); Workers how many there are in all.
	Busy, Workers int
	// Wait is how long the reporting request itself waited for its worker.
	Wait time.Duration
	// QPS is the rate of admissions over the last second or so (0 at the first report, and
	// within the first second, or the first after a quiet spell of two or more, the rate so
	// far, renewed every 100 ms): what a load-aware balancer weighs utilisation against.
	QPS float64
}

// Utilization is the demand on the workers as a fraction of their number: (Busy + Queued) /
// Workers. It exceeds 1 when requests wait, which tells an ORCA-aware balancer (gRFC A58) how
// much more than full the server is, not only that it is full.
func (l Load) Utilization() float64 {
	if l.Workers <= 0 {
		return 0
	}
	return float64(l.Busy+l.Queued) / float64(l.Workers)
}

// rateEvery is how often the admission rate is recomputed: over windows of at least a second,
// long enough to average a few requests even at low rates.
const rateEvery = time.Second

// earlyEvery is how often the rate is estimated within the first window. A rate that changed
// on every request would make every report a new one; a steady report is one a server can
// send again as it is (hedgegrpc keeps its encoding, HTTP/2's header compression indexes it).
const earlyEvery = rateEvery / 10

// Counts is Load without the admission rate (QPS 0), for a report that does not carry one
// (hedgehttp's): it takes the queue's lock once and reads no clock.
func (q *Queue) Counts(wait time.Duration) Load {
	q.mu.Lock()
	l := q.countsLocked(wait)
	q.mu.Unlock()
	return l
}

// countsLocked is Counts with q.mu held.
func (q *Queue) countsLocked(wait time.Duration) Load {
	return Load{Queued: q.first.n + q.hedged.n, Busy: q.running, Workers: q.workers, Wait: wait}
}

// Load returns the queue's state now, for a request that waited wait: the report its response
// carries. It takes the queue's lock once and reads the clock once.
func (q *Queue) Load(wait time.Duration) Load {
	now := time.Now()
	q.mu.Lock()
	l := q.countsLocked(wait)
	switch el := now.Sub(q.rateAt); {
	case q.rateAt.IsZero():
		// The first estimate comes earlyEvery on: a rate over the microseconds to the next
		// report would read a handful of requests as thousands a second, and a load-aware
		// balancer would send a new server everything.
		q.rateAt, q.rateN, q.early = now, q.stats.Admitted, now
	case el >= 2*rateEvery:
		// The window spans a quiet spell: its rate is not the last second's. Start over
		// as at the first report, with early estimates.
		q.qps = float64(q.stats.Admitted-q.rateN) / el.Seconds()
		q.rateAt, q.rateN, q.rated, q.early = now, q.stats.Admitted, false, now
	case el >= rateEvery:
		q.qps = float64(q.stats.Admitted-q.rateN) / el.Seconds()
		q.rateAt, q.rateN, q.rated = now, q.stats.Admitted, true
	case !q.rated && el > 0 && now.Sub(q.early) >= earlyEvery:
		// Within the first window, the rate so far, every earlyEvery: a balancer that
		// ignores a report without a rate (gRFC A58's) can then use the first ones.
		q.qps = float64(q.stats.Admitted-q.rateN) / el.Seconds()
		q.early = now
	}
	l.QPS = q.qps
	q.mu.Unlock()
	return l
}
