package hedge

import (
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/internal/loadpack"
	"github.com/hedgekit/hedge/replica"
)

// This file holds what the servers tell the policy about their own load (gRFC A51's idea,
// carried by hedgehttp's LoadHeader and by ORCA per-call reports in hedgegrpc). A client sees
// only its own calls; a server's queue sees every client's. Where the servers report, the
// policy stops guessing: the backlog gate asks the latest reports instead of inferring a
// backlog from latency, and the in-service evidence (Adaptive.MinimumInService) is not needed,
// since a short queue means the call being copied is in service.

// Load is one server's report of its own load, as a response carries it.
type Load struct {
	// Queued is how many requests were waiting for a worker when the server answered.
	Queued int
	// Busy is how many of its Workers were running a request. Workers 0 means the server
	// did not say; the queue is then judged by Queued alone. A server of more than 65,535
	// workers is held as 65,535, with Queued and Busy scaled down in proportion (a queue is
	// judged relative to its workers), so ServerQueue reads its figures scaled.
	Busy, Workers int
	// Wait is how long the answered request itself waited for a worker.
	Wait time.Duration
}

// LoadMaxAge is how long a report counts: one received longer ago says nothing of the
// server now (a queue drains or builds within a few service times), and the policy decides
// as if it had never been sent, from latency alone.
const LoadMaxAge = 300 * time.Millisecond

// maxLoadReplicas bounds the replicas whose reports a policy keeps apart; replica numbers
// beyond it share slots (modulo), which only blurs their reports together.
const maxLoadReplicas = 64

// loadBoard is the latest report from each replica. Each slot is written with two atomic
// stores; a reader that sees a report of one time with the figures of the next judges a
// report a moment newer or older than it is, which no decision here depends on.
type loadBoard struct {
	used   atomic.Int32 // slots in use: the highest replica number reported, plus one
	latest atomic.Int64 // unix nanoseconds of the newest report; 0 = none yet
	slots  [maxLoadReplicas]loadSlot
}

type loadSlot struct {
	at   atomic.Int64  // unix nanoseconds the report was received; 0 = none
	v    atomic.Uint64 // Queued, Busy and Workers (loadpack.Pack)
	wait atomic.Int64  // the report's Wait, nanoseconds
	idle atomic.Int64  // unix nanoseconds of the latest report with a worker idle; 0 = none
}

// ReportLoad records the load that replica reported on a response received at now. replica
// is the transport's number for the server (replica.Set's index; 0 when there is one server).
// Transports call it for every response that carries a report (hedgehttp.Transport reads
// hedgehttp.LoadHeader, hedgegrpc's balancer the ORCA report); the simulator for every
// response of a server-assisted setup. It is safe for concurrent use and allocates nothing.
// On a nil or zero Policy it does nothing (see [Policy]).
//
// What the policy does with reports (docs/design.md, "Server load reports"): while one
// received within [LoadMaxAge] exists (and the trigger is not [Tied]), a hedge is sent only if
// the replica with the shortest reported queue would start it soon (of every reporting replica,
// the call's own included: the policy does not know a call's replicas; the transport's choice
// sends the copy to the shortest among those the call has not used, which is that one unless
// the call's own is the shortest) and the reporting fleet is not backlogged as a whole, and it is then sent
// without waiting for in-service evidence; a queue under one service time still passes a
// straggler's copy while the servers have had idle workers lately (see Policy.serverGate).
// A refusal is reported as [ReasonBacklog]. Reports never start a hedge on their own: the
// trigger's threshold still decides when a call is slow.
func (p *Policy) ReportLoad(now time.Time, replica int, l Load) {
	if p == nil || p.bud == nil {
		return
	}
	if replica < 0 {
		replica = 0
	}
	i := replica % maxLoadReplicas
	b := &p.loads
	s := &b.slots[i]
	s.v.Store(loadpack.Pack(l.Queued, l.Busy, l.Workers))
	s.wait.Store(int64(max(l.Wait, 0)))
	t := now.UnixNano()
	if l.Queued <= 0 && l.Busy < l.Workers {
		s.idle.Store(t)
	}
	s.at.Store(t)
	for u := b.used.Load(); int32(i) >= u && !b.used.CompareAndSwap(u, int32(i)+1); u = b.used.Load() {
	}
	// The newest report's time only grows, but for a wall clock stepped back (NTP, a VM
	// restored): a latest more than LoadMaxAge ahead of a report is from before the step.
	for l := b.latest.Load(); (t > l || l-t >= int64(LoadMaxAge)) && !b.latest.CompareAndSwap(l, t); l = b.latest.Load() {
	}
}

// reported reports whether replica's latest report still counts at now.
func (b *loadBoard) reported(now time.Time, replica int) bool {
	if replica < 0 {
		replica = 0
	}
	return fresh(b.slots[replica%maxLoadReplicas].at.Load(), now)
}

// fresh reports whether a report received at unix nanoseconds at still counts at now.
func fresh(at int64, now time.Time) bool {
	// Within LoadMaxAge either way: a report a little after now was received by another
	// goroutine that read the clock later; one far after it, before the wall clock stepped
	// back, and it is as old as its step, not younger than the present.
	d := now.UnixNano() - at
	return at != 0 && d < int64(LoadMaxAge) && d > -int64(LoadMaxAge)
}

// shortest returns the shortest queue among the fresh reports, relative to each server's
// workers (a queue of 4 at 16 workers is shorter than one of 2 at 2), and whether any report
// is fresh. It is one atomic load when none is.
func (b *loadBoard) shortest(now time.Time) (queued, workers int, ok bool) {
	v, ok := b.scan(now)
	return v.queued, v.workers, ok
}

// loadView is what the fresh reports say at one moment (loadBoard.scan).
type loadView struct {
	queued, workers int           // the shortest queue (see loadBoard.shortest) and its server's workers
	wait            time.Duration // the Wait of that server's report
	demand          float64       // requests running or waiting per worker, over every fresh report (0: no workers said)
	spare           bool          // every server with a fresh report had a worker idle within spareMaxAge
}

// scan returns the shortest fresh queue (see shortest) with its report's wait, the fleet's
// demand (the requests running or waiting at every server with a fresh report, per worker
// of theirs) and whether every one of those servers has had spare room lately.
func (b *loadBoard) scan(now time.Time) (v loadView, ok bool) {
	if !fresh(b.latest.Load(), now) {
		return loadView{}, false
	}
	n := int(b.used.Load())
	var want, have int64 // 64 bits: a queue near an int's largest, plus its busy workers, wraps round an int of 32
	v.spare = true
	for i := range n {
		s := &b.slots[i]
		if !fresh(s.at.Load(), now) {
			continue
		}
		r := s.v.Load()
		q, busy, w := loadpack.Unpack(r)
		want += int64(q) + int64(busy)
		have += int64(w)
		if idle := s.idle.Load(); idle == 0 || now.UnixNano()-idle >= int64(spareMaxAge) || idle-now.UnixNano() >= int64(spareMaxAge) { // the second: see fresh
			v.spare = false
		}
		if !ok || int64(q)*int64(max(v.workers, 1)) < int64(v.queued)*int64(max(w, 1)) { // 64 bits: a queue may be 2^32 − 1 (loadpack)
			v.queued, v.workers, v.wait, ok = q, w, time.Duration(s.wait.Load()), true
		}
	}
	if have > 0 {
		v.demand = float64(want) / float64(have)
	}
	return v, ok
}

// queueLong reports whether a server's queue is too long for a hedge: a copy that joins a
// queue of queued requests at a server whose workers are all busy starts once queued+1 of
// them have finished, about (queued+1)/workers service times later, and the queue is long
// when that is half a service time or more. There a copy stops beating a straggler by much and
// starts adding load to a backlog. With the workers unknown, any queue is long.
func queueLong(queued, workers int) bool {
	return queued > 0 && 2*(int64(queued)+1) >= int64(workers) // 64 bits: a queue may be 2^32 − 1 (loadpack)
}

// fleetFull is the demand (requests running or waiting per worker, over every server with a
// fresh report) at which the fleet as a whole is backlogged: every worker busy and as many
// requests again waiting. A copy sent to the one server with room then takes room that the
// backlog's own requests are about to need. (At one server, queueLong decides first.)
const fleetFull = 2

// spareMaxAge is how recently every reporting server must have reported a worker idle for a
// queue under one service time to pass a straggler's copy (Policy.serverGate): as long as a
// report may route a first attempt (replica.RouteMaxAge), a few service times.
const spareMaxAge = replica.RouteMaxAge

// stragglerWaits is how many times the policy's lowest recent median latency a call must
// have run beyond the reported wait for the gate to take its first attempt for a straggler
// (Policy.serverGate).
const stragglerWaits = 2

// serverGate is the backlog gate as the servers' reports decide it: decided is false when no
// report is fresh (the gate then infers a backlog from latency); otherwise long says whether a
// hedge would wait too long where it would go (the shortest reported queue), or the fleet as a
// whole is backlogged.
//
// One queue that is long by queueLong but shorter than its server's workers (a copy starts
// within about one service time) does not refuse c's hedge when every reporting server had a
// worker idle within spareMaxAge, so that the queue is a passing burst and not a standing
// backlog, and c has run for the shortest queue's reported wait plus stragglerWaits × the
// lowest recent median latency, so that its first attempt, in a FIFO queue, is in service and
// slow: a straggler, whose copy, one ordinary request, finishes long before it. At one queue
// of 16 workers at 85 % load these were most of the calls at p99 (BENCHMARKS.md, "One queue
// at 85 %: a straggler's copy while the queue is a passing burst"). Without the idle workers (a queue still building, as at 95 %)
// such copies lengthen the bursts behind them, and without the call's run beyond the wait
// (at 70 %, where calls reach their threshold sooner) they copy calls that may still be
// queued. c may be nil: only the queue then decides.
func (p *Policy) serverGate(now time.Time, c *Call) (long, decided bool) {
	if p.cfg.Trigger.kind == triggerTied {
		return false, false // ties dodge queues their own way
	}
	v, ok := p.loads.scan(now)
	if !ok {
		return false, false
	}
	if v.demand >= fleetFull {
		return true, true
	}
	if !queueLong(v.queued, v.workers) {
		return false, true
	}
	return c == nil || v.queued >= v.workers || !v.spare || !c.straggles(now, v.wait), true
}

// straggles reports whether the call has run for wait plus stragglerWaits × the policy's
// lowest recent median latency: a first attempt that waited no longer than wait for a worker
// has been in service that long, far beyond an ordinary request's time.
func (c *Call) straggles(now time.Time, wait time.Duration) bool {
	_, floor, ok := c.p.medianAndFloor()
	return ok && now.Sub(c.start) >= wait+stragglerWaits*floor
}

// serverReports reports whether the servers' reports stand in for the in-service evidence
// at now. Start signals, when StartAware receives them, say exactly which attempt is in
// service, which a queue length one response old cannot: they keep the decision.
func (p *Policy) serverReports(now time.Time) bool {
	switch k := p.cfg.Trigger.kind; {
	case k == triggerTied, k == triggerStartAware && p.signalled(now):
		return false
	}
	return fresh(p.loads.latest.Load(), now)
}

// ServerQueue returns the shortest queue among the servers' reports that still count at now
// (see [Policy.ReportLoad]), relative to each server's workers, with that server's workers,
// and false when no report counts (always, on a nil or zero Policy): what the backlog gate
// decides from, for dashboards and tests.
func (p *Policy) ServerQueue(now time.Time) (queued, workers int, ok bool) {
	if p == nil || p.bud == nil {
		return 0, 0, false
	}
	return p.loads.shortest(now)
}
