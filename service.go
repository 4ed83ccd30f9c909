package hedge

import (
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/latency"
	"github.com/hedgekit/hedge/replica"
)

// This file holds the policy-wide evidence that a first attempt is being served, not queued,
// and the backlog gate. Both exist for one reason: a hedge of a call that is slow because it
// waits in the dependency's queue joins the same queue behind it, cannot win, and adds load
// exactly when the dependency has none to spare. A hedge of a call that is slow because its
// own service is slow (a straggler) is what hedging is for (docs/design.md, "Queued or in
// service" and the backlog gate in "The gates").

// overtakes tracks, for a FIFO dependency, when each call was first overtaken: when an
// attempt of a call that started later answered first. In a first-in-first-out server a call
// that a later call overtook has left the queue (the later call could only be served after
// it was), so it is in service, and the time since it was first overtaken is a lower bound on
// its time in service.
//
// Calls are numbered in the order they start (Call.seq). mark is the highest number of a
// call that has answered successfully; call s has been overtaken exactly when mark > s. When
// mark rises from w to j at time t, the calls w+1 … j-1 are overtaken for the first time at
// t, and ring remembers t for each of them (tagged with the call's low bits, so a stale entry
// is recognised). Each call number is written at most once, so the cost is one atomic load
// and, when the mark moves, one compare-and-swap and a few stores per answer.
type overtakes struct {
	mark atomic.Int64
	ring [overtakeRing]atomic.Uint64
}

const (
	overtakeRing = 1024 // calls remembered; a call overtaken by more than this many is long in service
	stampBits    = 44   // microseconds, modulo 2^44 (about 203 days): elapsed times wrap safely
	stampMask    = 1<<stampBits - 1
	tagMask      = 1<<(64-stampBits) - 1
)

// answered records that an attempt of call j answered successfully at now.
func (o *overtakes) answered(j int64, now time.Time) {
	for {
		w := o.mark.Load()
		if j <= w {
			return
		}
		if o.mark.CompareAndSwap(w, j) {
			stamp := uint64(now.UnixMicro()) & stampMask
			for s := max(w+1, j-overtakeRing); s < j; s++ {
				o.ring[s%overtakeRing].Store(uint64(s)&tagMask<<stampBits | stamp)
			}
			return
		}
	}
}

// since reports how long ago call s was first overtaken, and whether it has been.
func (o *overtakes) since(s int64, now time.Time) (time.Duration, bool) {
	w := o.mark.Load()
	if w <= s {
		return 0, false
	}
	e := o.ring[s%overtakeRing].Load()
	if e>>stampBits != uint64(s)&tagMask {
		if w-s >= overtakeRing {
			return time.Hour, true // overtaken by a thousand later calls: long in service
		}
		return 0, true // the entry is being written: overtaken just now
	}
	us := (uint64(now.UnixMicro()) - e) & stampMask
	return time.Duration(us) * time.Microsecond, true
}

// replicaOvertakes is overtakes kept per replica of one replica.Set: behind several replicas,
// each a FIFO queue of its own, a call is in service once a later call has answered from the
// same replica. A call overtaken by answers from other replicas may still wait in its own
// replica's queue, and a client with a thin share of a fleet's traffic, whose balancer sees
// only its own attempts, sends as many calls to a replica with a queue as to one without: near
// full load, where most replicas queue at any moment, the copies of such calls join a queue
// behind them, win seldom, and add load where it costs everyone most.
type replicaOvertakes struct {
	set *replica.Set
	ovt []replicaEvidence
}

// replicaEvidence is what the policy knows of one replica's queue: which of its calls later
// calls answered from it overtook, and which of its latest answers were slow (noteAnswer).
type replicaEvidence struct {
	overtakes
	lastSlow atomic.Uint32 // one bit per answer, newest lowest
}

func (r *replicaEvidence) noteAnswer(slow bool) {
	b := uint32(0)
	if slow {
		b = 1
	}
	for {
		v := r.lastSlow.Load()
		if r.lastSlow.CompareAndSwap(v, v<<1|b) {
			return
		}
	}
}

// replicaQueuedAnswers: a replica shows a queue while one of its latest replicaQueuedAnswers
// answers was slow. Measured (4 replicas × 4 workers behind p2c, 32 clients, the reference
// mixture, cancellation ignored, seeds 1-8; and the scorecard's replica families): counting
// every replica as queued (no cross-replica evidence while the dependency is not quiet) held
// no better at 90-95 % load (3 of 16 points missed, against 3 with two answers) and cost the
// replica families their payoff at 30-50 % (a balancer that steers away from a busy replica
// sends no later call there to overtake a straggler); four or eight answers (seeds 1-3)
// missed the same point as two, 95 % seed 2, and paid less at 70-85 %.
const replicaQueuedAnswers = 2

// replicaQueued reports whether replica i of set shows a queue of its own: one of its latest
// answers to this policy was slow. A replica not tracked counts as queued.
func (p *Policy) replicaQueued(set *replica.Set, i int) bool {
	r := p.replicaOvertakes(set, i)
	return r == nil || r.lastSlow.Load()&(1<<replicaQueuedAnswers-1) != 0
}

// trackedReplicas is how many replicas of a set the policy tracks overtaking for (8 KiB
// each); a call sent to a replica beyond them gets no per-replica evidence.
const trackedReplicas = 16

// replicaOvertakes returns the overtakes of replica i of set, made on the first call routed
// to set; nil when the policy tracks another set, or i is beyond trackedReplicas.
func (p *Policy) replicaOvertakes(set *replica.Set, i int) *replicaEvidence {
	r := p.rovt.Load()
	if r == nil {
		r = &replicaOvertakes{set: set, ovt: make([]replicaEvidence, min(set.Len(), trackedReplicas))}
		if !p.rovt.CompareAndSwap(nil, r) {
			r = p.rovt.Load()
		}
	}
	if r.set != set || i < 0 || i >= len(r.ovt) {
		return nil
	}
	return &r.ovt[i]
}

// median is a streaming estimate of the recent median latency, cheap enough for every
// answer: each sample moves it 1/256 of its value towards the sample (up when the sample is
// above it, down when below), so it settles where half the samples are on each side, and
// follows a change of the median within some 180 samples per doubling: a window counted in
// calls, not seconds, so a client with a thin share of the traffic gets the same evidence
// as a busy one, only later. Smaller steps would react later; larger ones wander, and the
// lowest value of a wandering estimate sits well below the median, which would close the
// gate at loads where hedging still pays. Under contention a sample whose compare-and-swap
// loses is dropped: the estimate needs no sample in particular.
//
// It starts from the latency estimator's median once that has seedSamples samples, rather
// than from a first sample that may be a straggler fifty times the median and take a
// thousand samples to come down from.
type median struct {
	v atomic.Int64
	n atomic.Int32 // samples seen before it settled, up to seedSamples
}

// seedSamples is how many samples the latency estimator holds when the median starts from
// its median: enough for a median within a few per cent.
const seedSamples = 64

// settled reports whether the estimate has started and can be used.
func (m *median) settled() bool { return m.v.Load() != 0 }

// seed counts a sample before the estimate has started, and starts it from est's median at
// the seedSamples-th.
func (m *median) seed(now time.Time, est *latency.Estimator) {
	if m.n.Add(1) < seedSamples {
		return
	}
	q, _ := est.Quantile(now, 0.5)
	m.v.CompareAndSwap(0, max(int64(q), 1))
}

func (m *median) record(d time.Duration) {
	x := max(int64(d), 1)
	c := m.v.Load()
	step := max(c>>8, 1)
	switch {
	case x > c:
		m.v.CompareAndSwap(c, c+step)
	case x < c:
		m.v.CompareAndSwap(c, max(c-step, 1))
	}
}

func (m *median) load() time.Duration { return time.Duration(m.v.Load()) }

// backlog is the backlog gate's state: the lowest recent median latency seen over the last
// one to two periods, kept in two rotating minima (nanoseconds; 0 = none yet).
type backlog struct {
	period int64 // nanoseconds
	epoch  atomic.Int64
	cur    atomic.Int64
	prev   atomic.Int64
}

// observe folds the recent median m, observed at now, into the minima.
func (b *backlog) observe(now time.Time, m time.Duration) {
	ep := now.UnixNano() / b.period
	// An epoch more than one behind the current one: the wall clock stepped back, and the
	// minima of the epochs ahead of it say nothing of now. They start again.
	if old := b.epoch.Load(); (ep > old || ep < old-1) && b.epoch.CompareAndSwap(old, ep) {
		if ep == old+1 {
			b.prev.Store(b.cur.Load())
		} else {
			b.prev.Store(0)
		}
		b.cur.Store(0)
	}
	v := int64(m)
	for {
		c := b.cur.Load()
		if (c != 0 && c <= v) || b.cur.CompareAndSwap(c, v) {
			return
		}
	}
}

// floor returns the lowest recent median of the last one to two periods (0 = none yet).
func (b *backlog) floor() time.Duration {
	f := b.cur.Load()
	if p := b.prev.Load(); f == 0 || (p != 0 && p < f) {
		f = p
	}
	return time.Duration(f)
}

// crossings counts the calls that reached their hedge threshold, against the calls started,
// over the last one to two blocks. A threshold at the q-quantile is crossed by about 1-q of
// calls when slowness is bad luck; when far more cross at once, the whole dependency has
// slowed down (a queue, a brownout) and a hedge would add load to all of it.
//
// A block lasts a period (a second by default) and at least crossBlock calls: a client with
// a thin share of the traffic sees a handful of calls a second, and a share over a handful
// is noise (three crossings in twenty calls, by bad luck, would read as a slowdown), so its
// blocks are counted in calls instead. The share is judged only over at least a period too:
// a busy client that stalls for a few milliseconds (a garbage collection, a machine short of
// CPU) sees every call it has in flight cross at once, which over a second of its calls is
// nothing and over the first few milliseconds of a block would be all of them. A block that
// has not filled within idleBlocks periods is dropped with the one before it: crossings that
// old say nothing about now. The calls started come from the policy's call counter, so the
// fast path pays nothing for it.
type crossings struct {
	period  int64        // nanoseconds
	begun   atomic.Int64 // unix nanoseconds when the current block began
	since   atomic.Int64 // unix nanoseconds when the counted span began (the previous block, if kept)
	callsAt atomic.Int64 // the policy's call count when the previous block began
	nextAt  atomic.Int64 // the policy's call count when the current block began
	prev    atomic.Int64 // crossings in the previous block
	cur     atomic.Int64 // crossings in the current block
}

const (
	crossBlock = 64 // calls a block holds at least
	idleBlocks = 30 // periods after which an unfilled block and the one before are dropped
)

// crossed records that a call reached its threshold at now, calls being the policy's
// call count then.
func (x *crossings) crossed(now time.Time, calls int64) {
	x.rotate(now, calls)
	x.cur.Add(1)
}

func (x *crossings) rotate(now time.Time, calls int64) {
	t, b := now.UnixNano(), x.begun.Load()
	if d := t - b; d < x.period && d > -x.period {
		return
	}
	full := calls-x.nextAt.Load() >= crossBlock
	// A block begun more than a period ahead of now was begun before the wall clock stepped
	// back: stale, as one long past is.
	stale := t-b >= idleBlocks*x.period || t < b
	if (!full && !stale) || !x.begun.CompareAndSwap(b, t) {
		return
	}
	if full && !stale {
		x.prev.Store(x.cur.Load())
		x.callsAt.Store(x.nextAt.Load())
		x.since.Store(b)
	} else {
		x.prev.Store(0)
		x.callsAt.Store(calls)
		x.since.Store(t)
	}
	x.cur.Store(0)
	x.nextAt.Store(calls)
}

// share returns the share of calls started over the last one to two blocks that crossed
// their threshold, and false while fewer than crossBlock calls, or less than a period, make
// the share.
func (x *crossings) share(now time.Time, calls int64) (float64, bool) {
	x.rotate(now, calls)
	n := calls - x.callsAt.Load()
	if n < crossBlock || now.UnixNano()-x.since.Load() < x.period {
		return 0, false
	}
	return float64(x.prev.Load()+x.cur.Load()) / float64(n), true
}
