package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// This file is the discrete-event engine: virtual time, the event heap, the replicas (each a
// FIFO queue and its workers; the reference model is one replica), and the bookkeeping behind a
// Point. It makes no client decision: every call
// is driven by a client (client.go drives the library's own per-call state machine), and the
// engine only carries out what the client asks (start attempt k, cancel it, arm a timer, finish).

// reqState is where a request is in the server.
type reqState uint8

const (
	rqFree    reqState = iota // the record is on the free list
	rqQueued                  // waiting in the FIFO queue
	rqService                 // a worker is serving it
	rqTomb                    // cancelled while queued ("reaches" mode); skipped and freed when dequeued
	rqRefused                 // sent to a replica that refuses connections: fails when the refusal arrives
	rqLost                    // sent to a black-holed replica: never answered, until cancelled
)

// request is one attempt of one call as the server sees it.
type request struct {
	svc        int64 // service time, ns, drawn when the attempt is started
	enq        int64 // when it joined the queue
	start      int64 // when a worker began serving it
	slot       int32 // the call slot it belongs to; -1 once detached (its answer will be discarded)
	attempt    int32
	worker     int32
	replica    int32
	gen        uint32 // bumped when the record is freed, so a delayed cancellation for an earlier use is stale
	state      reqState
	measured   bool // it belongs to a measured call
	cancelling bool // detached in "reaches" mode; its cancellation is still on its way to the server
}

// slot is one call in flight. Slots are pooled: a finished call's slot serves a later call.
type slot struct {
	idx      int   // the call's index in arrival order
	arrive   int64 // arrival time, ns
	timerGen uint32
	measured bool
	finished bool
	waiting  bool    // it waits in its client for a place among the client's calls in flight
	client   int32   // which client made the call
	used     []int   // replicas the call has sent attempts to, for the balancer
	reqs     []int32 // attempt index → request index while the attempt is attached, else -1
	rng      rand.PCG
	rnd      *rand.Rand   // per-call jitter stream, seeded from (seed, call index)
	late     []lateReport // attempt index → the load report its late answer carries (ServerLoad with a busy client)
	// pending: attempt index → the service time of a measured attempt the server answered but
	// whose answer a busy client has not got to yet (0: none). If the call drops that answer
	// (another attempt wins first, or the attempt is cancelled), its service was wasted.
	pending []int64
}

// lateReport is the load report of a response whose answer a busy client gets to later.
type lateReport struct {
	from int
	l    hedge.Load
}

// client drives calls. The engine calls it for each event that concerns a call; the client
// answers by calling the engine's startAttempt, cancelAttempt, armTimer and finish.
type client interface {
	arrive(s *sim, sl int32)
	started(s *sim, sl int32, attempt int)
	done(s *sim, sl int32, attempt int)
	timer(s *sim, sl int32)
	// refused: attempt k never reached a server (its replica refused the connection).
	refused(s *sim, sl int32, attempt int)
	// deadline: the call's caller gave up (Params.Timeout).
	deadline(s *sim, sl int32)
	// load: client c received replica rp's load out of band (Setup.LoadInterval).
	load(s *sim, c int32, rp int, l hedge.Load)
}

// stream ids for the independent random streams of a run.
const (
	streamArrivals uint64 = 0x61727269 // "arri"
	streamService  uint64 = 0x73657276 // "serv"
	streamJitter   uint64 = 0x6a697474 // "jitt"
	streamClient   uint64 = 0x636c6e74 // "clnt": which client makes a call
	streamPhase    uint64 = 0x70686173 // "phas": the replicas' pause phases
	streamChoose   uint64 = 0x63686f6f // "choo": the balancers' random choices for hedges and retries
	streamPick     uint64 = 0x7069636b // "pick": the balancers' random draws for first attempts, by call
	streamReport   uint64 = 0x72707274 // "rprt": the phases of the clients' out-of-band reports
)

// mix is the splitmix64 finaliser: it turns related inputs (seed, stream, call index) into
// unrelated PCG seeds, so streams seeded from neighbouring numbers are not correlated.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func streamKey(seed, stream uint64) uint64 { return mix(mix(seed) ^ stream) }

// later is virtual time d (≥ 0) after t, saturating: a deadline or a delay too long to
// happen in any run (a Timeout of math.MaxInt64, say) is at the end of time, not wrapped
// into the past.
func later(t, d int64) int64 {
	if d > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + d
}

// maxService caps one service time (about 13 days) so that virtual time cannot overflow.
const maxService = time.Duration(1) << 50

// checkpoints is how many times during the arrivals the queue length is sampled for collapse
// detection: at every 1/checkpoints of the calls.
const checkpoints = 20

// sim is one simulation in progress. One sim is reused for many points (one per sweep
// goroutine), so its slices keep their capacity and a run allocates nothing in steady state.
// Its state comes in groups, one concept each, embedded so that the engine reads every field
// by its own name: the model the run simulates, the servers, the calls in flight, the clients'
// own queues, the random streams, the run's progress, and what is measured.
type sim struct {
	model
	servers
	callTable
	clientQueues
	streams
	progress
	tally

	now int64 // virtual time, ns
	h   eventHeap
	cl  client // drives the calls (client.go)
	// onStart, in tests, sees each attempt as it is sent, and whether its client had a
	// replica ejected or on trial (back from an ejection, not yet answering).
	onStart func(call, attempt, replica int, svc int64, ejected bool)
	// onService, in tests, sees each attempt of a measured call as a worker starts it, with
	// how long it waited in its replica's queue.
	onService func(call, attempt int, wait, svc int64)
	// onEvent, in tests, sees every event of a measured call as its policy's Observer does.
	onEvent func(call int, e hedge.Event)
	// onFinish, in tests, sees each measured call that succeeds as it ends, with its latency.
	onFinish func(call int, latency int64)
	// onCallEnd, for timelines, sees every call end, measured or not, at virtual time at,
	// with its latency after its arrival and its error (nil: it succeeded).
	onCallEnd func(at, latency int64, err error)
}

// model is the run's parameters, fixed from reset to the end of the run.
type model struct {
	workers              int // per replica
	replicas             int
	clients              int
	clientInFlight       int     // per client; 0 = unbounded
	heavyShare           float64 // the share of calls client 0 makes; 0 = an even split
	tieDelay             int64   // how long a cancellation takes to reach the server ("reaches" mode), ns
	arrMult              func(t int64) (m float64, until int64)
	svcMult              func(replica int, t int64) float64
	pauseEvery, pauseLen int64
	failures             []failureWindow
	timeout              int64 // a call's deadline after its arrival, ns; 0 = none
	lagging              bool  // the clients are late to their own events (ClientDelay)
	lag                  clientLag
	dist                 Distribution
	calls                int // calls whose arrivals make the run; calls ≥ this index still arrive but are not measured
	warm                 int // index of the first measured call
	reaches              bool
	maxQueue             int
	maxEvents            int64
	meanGap              float64    // mean inter-arrival time, ns
	reports              bool       // responses carry their server's load report
	report               hedge.Load // the report of the response being delivered, when reports
	reportFrom           int        // the replica that sent it
	reportEvery          int64      // out-of-band reports to each client, ns apart; 0 = none
}

// servers is the replicas: their queues, their workers and the requests they hold.
type servers struct {
	q          []ring // per replica
	live       int    // queued requests that are not tombstones, every replica
	rlive      []int  // the same per replica
	reqs       []request
	freeReq    []int32
	wreq       []int32   // worker → request it serves, -1 idle; replica r has workers [r·workers, (r+1)·workers)
	wgen       []uint32  // worker generation: bumped when a service ends early, so its evDone is stale
	freeW      [][]int32 // per replica
	idle       int       // idle workers, every replica
	busy       int
	pausePhase []int64 // per replica; -1 = this replica never pauses
	wake       []int64 // per replica: the end of the pause a wake-up event was pushed for
}

// callTable is the calls in flight, by slot, and the callback in progress.
type callTable struct {
	slots     []*slot
	free      []int32
	release   int32     // slot whose call finished during the current callback, released after it
	cur       int32     // slot of the callback in progress (the observer attributes events to it)
	timingOut bool      // the callback in progress is a call's deadline
	choose    []chooser // per client: its own balancer and view of the replicas
}

// clientQueues is the clients' own queues (Params.ClientInFlight): calls in flight per
// client, calls waiting per client (slots, oldest first), and calls whose turn came during the
// current event, started once it is handled.
type clientQueues struct {
	inflight []int
	waitQ    [][]int32
	waiting  int
	starts   []int32
}

// streams is the run's independent random streams (see the stream ids).
type streams struct {
	arrRng  rand.PCG
	arrRand *rand.Rand
	svcRng  rand.PCG
	svcRand *rand.Rand
	svcKey  uint64
	jitKey  uint64
	cliKey  uint64
	pickKey uint64
	rptKey  uint64
	nextArr float64
}

// progress is how far the run has got, and what collapse detection has seen.
type progress struct {
	arrivals    int
	outstanding int // measured calls not finished yet
	stop        bool
	collapse    bool
	stalled     bool // the arrival rate changed too often between two arrivals (modulatedArrival)
	events      int64
	queueAt     [checkpoints + 1]int
	nextCheck   int
	midT        int64 // when half the calls had arrived
	lastIdle    int64 // the last time a worker was idle
}

// tally is what is measured, over measured calls and the measurement window.
type tally struct {
	measuring bool
	winStart  int64
	lastT     int64
	area      int64 // ∫ busy workers dt over the window, worker·ns
	lat       []int64
	measuredN int // measured calls that arrived (all of them unless the run collapsed)
	finishedN int
	rejected  int // failed calls refused before reaching the server (limit, breaker)
	failed    int // every failed call, rejected ones included
	reached   int64
	serverNs  int64
	wastedNs  int64
	waitNs    int64
	waitN     int64
	hedges    int64
	wins      int64
}

func newSim() *sim {
	s := &sim{}
	s.arrRand = rand.New(&s.arrRng)
	s.svcRand = rand.New(&s.svcRng)
	return s
}

// runParams is everything the engine needs for one run.
type runParams struct {
	workers              int // per replica
	replicas             int // 0 = 1
	clients              int // 0 = 1
	clientInFlight       int
	heavyShare           float64
	choose               []chooser // per client, when replicas > 1
	tieDelay             int64
	arrMult              func(t int64) (m float64, until int64) // nil: a constant rate
	svcMult              func(replica int, t int64) float64     // nil: no slowdown
	pauseEvery, pauseLen int64                                  // 0: no pauses
	pauses               int                                    // how many replicas pause (the first ones)
	failures             []failureWindow
	timeout              int64
	busy                 ClientDelay // the clients' own delays
	dist                 Distribution
	calls                int
	warm                 int
	reaches              bool
	maxQueue             int
	maxEvents            int64
	lambda               float64 // calls per second
	seed                 uint64
	reports              bool  // the servers report their load on every response (serverload.go)
	reportEvery          int64 // with reports, every client gets every replica's load this often, ns; 0 = never
}

// reset readies s for a run of p, reusing every buffer of the last run. It is long because
// it is a list: one line per field of sim, to be kept beside the struct.
func (s *sim) reset(p runParams, cl client) {
	s.workers, s.dist, s.calls, s.warm, s.reaches = p.workers, p.dist, p.calls, p.warm, p.reaches
	s.maxQueue, s.maxEvents, s.cl = p.maxQueue, p.maxEvents, cl
	s.meanGap = 1e9 / p.lambda
	s.replicas, s.clients = max(p.replicas, 1), max(p.clients, 1)
	s.clientInFlight, s.heavyShare = p.clientInFlight, p.heavyShare
	s.inflight = s.inflight[:0]
	for len(s.waitQ) < s.clients {
		s.waitQ = append(s.waitQ, nil)
	}
	s.waitQ = s.waitQ[:s.clients]
	for c := range s.clients {
		s.inflight = append(s.inflight, 0)
		s.waitQ[c] = s.waitQ[c][:0]
	}
	s.waiting, s.starts = 0, s.starts[:0]
	s.choose, s.tieDelay, s.arrMult, s.svcMult = p.choose, p.tieDelay, p.arrMult, p.svcMult
	s.pauseEvery, s.pauseLen = p.pauseEvery, p.pauseLen
	s.failures, s.timeout, s.timingOut = p.failures, p.timeout, false
	s.lagging = !p.busy.zero()
	s.lag.reset(p.busy, p.seed)
	s.reports = p.reports
	s.reportEvery = 0
	if p.reports {
		s.reportEvery = p.reportEvery
	}

	s.now = 0
	s.h.reset()
	for len(s.q) < s.replicas {
		s.q = append(s.q, ring{})
		s.freeW = append(s.freeW, nil)
	}
	s.q, s.freeW = s.q[:s.replicas], s.freeW[:s.replicas]
	s.rlive = s.rlive[:0]
	s.pausePhase = s.pausePhase[:0]
	s.wake = s.wake[:0]
	for r := range s.replicas {
		s.q[r].reset()
		s.rlive = append(s.rlive, 0)
		ph := int64(-1)
		if s.pauseEvery > 0 && r < p.pauses {
			ph = int64(mix(streamKey(p.seed, streamPhase)+uint64(r)) % uint64(s.pauseEvery)) // unsynchronised
		}
		s.pausePhase = append(s.pausePhase, ph)
		s.wake = append(s.wake, 0)
	}
	s.live = 0
	s.reqs = s.reqs[:0]
	s.freeReq = s.freeReq[:0]
	s.wreq = s.wreq[:0]
	s.wgen = s.wgen[:0]
	for r := range s.replicas {
		s.freeW[r] = s.freeW[r][:0]
		for w := p.workers - 1; w >= 0; w-- {
			s.freeW[r] = append(s.freeW[r], int32(r*p.workers+w))
		}
	}
	for range s.replicas * p.workers {
		s.wreq = append(s.wreq, -1)
		s.wgen = append(s.wgen, 0)
	}
	s.idle = s.replicas * p.workers
	s.busy = 0
	s.free = s.free[:0]
	for i := len(s.slots) - 1; i >= 0; i-- {
		sl := s.slots[i]
		sl.finished, sl.reqs = true, sl.reqs[:0]
		sl.timerGen++
		s.free = append(s.free, int32(i))
	}
	s.release, s.cur = -1, -1

	s.arrRng.Seed(streamKey(p.seed, streamArrivals), mix(p.seed))
	s.svcKey = streamKey(p.seed, streamService)
	s.jitKey = streamKey(p.seed, streamJitter)
	s.cliKey = streamKey(p.seed, streamClient)
	s.pickKey = streamKey(p.seed, streamPick)
	s.rptKey = streamKey(p.seed, streamReport)
	s.nextArr = 0

	s.arrivals, s.outstanding = 0, 0
	s.stop, s.collapse, s.stalled = false, false, false
	s.events = 0
	s.queueAt = [checkpoints + 1]int{}
	s.nextCheck = 1
	s.midT, s.lastIdle = 0, 0

	s.measuring = false
	s.winStart, s.lastT, s.area = 0, 0, 0
	if cap(s.lat) < p.calls {
		s.lat = make([]int64, 0, p.calls)
	}
	s.lat = s.lat[:0]
	s.measuredN, s.finishedN, s.rejected, s.failed = 0, 0, 0, 0
	s.reached, s.serverNs, s.wastedNs, s.waitNs, s.waitN = 0, 0, 0, 0, 0
	s.hedges, s.wins = 0, 0
}

// run processes events until every measured call has finished or the run collapses.
func (s *sim) run(stopCheck func() bool) {
	s.scheduleArrival()
	s.scheduleReports()
	for s.h.len() > 0 && !s.stop {
		e := s.h.pop()
		s.events++
		s.now = e.t
		switch e.kind {
		case evArrival:
			s.arrive()
			s.scheduleArrival()
		case evDone:
			if s.wgen[e.idx] != e.gen {
				continue // the service was cut short by a cancellation
			}
			s.complete(e.idx)
		case evTimer:
			sl := s.slots[e.idx]
			if sl.timerGen != e.gen || sl.finished {
				continue // replaced by a later ArmTimer, or the call is over
			}
			s.cur = e.idx
			s.cl.timer(s, e.idx)
			s.flush()
		case evCancel:
			if r := &s.reqs[e.idx]; r.gen == e.gen && r.cancelling {
				s.cancelAtServer(e.idx)
			}
		case evRefused:
			if r := &s.reqs[e.idx]; r.gen == e.gen && r.state == rqRefused && r.slot >= 0 {
				si, k := r.slot, int(r.attempt)
				s.answeredAs(si, r, replica.Unreachable)
				s.slots[si].reqs[k] = -1
				s.freeRequest(e.idx)
				s.cur = si
				s.cl.refused(s, si, k)
				s.flush()
			}
		case evDeadline:
			sl := s.slots[e.idx]
			if sl.finished || uint32(sl.idx) != e.gen {
				continue // the call is over (its slot may serve another call by now)
			}
			s.cur, s.timingOut = e.idx, true
			if sl.waiting {
				s.giveUpWaiting(e.idx) // it never left its client: nothing was sent
			} else {
				s.cl.deadline(s, e.idx)
			}
			s.timingOut = false
			s.flush()
		case evAnswer:
			s.deliver(e.idx, e.gen)
		case evReport:
			s.reportOOB(e.idx)
			s.h.push(event{t: s.now + s.reportEvery, kind: evReport, idx: e.idx})
		case evSend:
			if sl := s.slots[e.idx]; !sl.finished && uint32(sl.idx) == e.gen {
				sl.waiting = false
				s.admit(e.idx)
			}
		}
		s.startWaiting()
		s.dispatch()
		s.startWaiting()
		if s.idle > 0 {
			s.lastIdle = s.now
		}
		if s.arrivals > s.calls && s.outstanding == 0 {
			break
		}
		if s.events >= s.maxEvents || s.arrivals > 2*s.calls+s.tailArrivals() {
			s.collapse = true // bounded work: the measured calls are not getting through
			break
		}
		if stopCheck != nil && s.events&0xffff == 0 && stopCheck() {
			break
		}
	}
	s.setBusy(0)
}

// tailArrivals is how many arrivals past twice the run's calls it allows before it declares a
// collapse: calls go on arriving while the last measured ones finish, and that tail grows with
// the workers (the arrival rate does), not with the calls. A fixed 1,000 read a short run on
// 1,024 workers at 30 % load, whose last straggler let 3,000 more calls arrive, as a collapse.
// 60 arrivals a worker are those of 200 mean service times at 30 % load; up to 16 workers (the
// reference model's) the bound is 1,000, as it was.
func (s *sim) tailArrivals() int {
	return max(1000, 60*len(s.wreq))
}

func (s *sim) scheduleArrival() {
	if s.arrMult == nil {
		s.nextArr += s.arrRand.ExpFloat64() * s.meanGap
	} else {
		s.nextArr = s.modulatedArrival(s.nextArr, s.arrRand.ExpFloat64())
	}
	s.h.push(event{t: int64(s.nextArr), kind: evArrival})
}

// modulatedArrival is the next arrival after t of a Poisson process whose rate is the mean
// rate times arrMult: e is an Exp(1) draw, spent across the pieces of the rate at their rates.
func (s *sim) modulatedArrival(t, e float64) float64 {
	for range 1 << 20 { // a bound, so that a rate of 0 everywhere cannot loop for ever
		m, until := s.arrMult(int64(t))
		if m > 0 {
			dt := e * s.meanGap / m
			if until <= 0 || t+dt <= float64(until) {
				return t + dt
			}
			e -= (float64(until) - t) * m / s.meanGap
		}
		if until <= 0 {
			break
		}
		t = float64(until)
	}
	// The rate changed more than the bound allows before the next call arrived (bursts far
	// shorter than the time between calls): the run ends, and Run reports it as an error of
	// the model, not as a collapse of the queue.
	s.stalled, s.stop = true, true
	return math.MaxInt64 / 2
}

// setBusy adds d to the busy worker count, integrating busy time over the measurement window.
func (s *sim) setBusy(d int) {
	if s.measuring {
		s.area += int64(s.busy) * (s.now - s.lastT)
	}
	s.lastT = s.now
	s.busy += d
}

func (s *sim) arrive() {
	i := s.arrivals
	s.arrivals++
	if i == s.warm {
		s.setBusy(0)
		s.measuring, s.winStart, s.area = true, s.now, 0
	}
	for s.nextCheck <= checkpoints && i == s.nextCheck*s.calls/checkpoints {
		s.queueAt[s.nextCheck] = s.live + s.waiting
		if s.nextCheck == checkpoints/2 {
			s.midT = s.now
		}
		s.nextCheck++
		if s.nextCheck > checkpoints && s.growing() {
			s.collapse, s.stop = true, true
			return
		}
	}

	var si int32
	if n := len(s.free); n > 0 {
		si = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		sl := &slot{}
		sl.rnd = rand.New(&sl.rng)
		s.slots = append(s.slots, sl)
		si = int32(len(s.slots) - 1)
	}
	sl := s.slots[si]
	sl.idx, sl.arrive, sl.finished = i, s.now, false
	sl.measured = i >= s.warm && i < s.calls
	sl.reqs = sl.reqs[:0]
	sl.used, sl.client, sl.waiting = sl.used[:0], s.clientOf(i), false
	sl.pending = sl.pending[:0]
	sl.rng.Seed(s.jitKey, mix(uint64(i)))
	if sl.measured {
		s.outstanding++
		s.measuredN++
	}
	if s.timeout > 0 {
		s.h.push(event{t: later(s.now, s.timeout), kind: evDeadline, idx: si, gen: uint32(i)})
	}
	if d := s.lag.send(s.now, i); d > 0 {
		// The busy client gets to the call later: until then it waits in the client (a
		// deadline fails it unsent), holding none of the client's places in flight.
		sl.waiting = true
		s.h.push(event{t: later(s.now, d), kind: evSend, idx: si, gen: uint32(i)})
		return
	}
	s.admit(si)
}

// admit lets the call in slot si leave its client, or wait in it for a place among the
// client's calls in flight.
func (s *sim) admit(si int32) {
	sl := s.slots[si]
	if c := sl.client; s.clientInFlight > 0 {
		if s.inflight[c] >= s.clientInFlight {
			// The client has as many calls in flight as it allows: this one waits in the
			// client, its latency counted from its arrival.
			sl.waiting = true
			s.waitQ[c] = append(s.waitQ[c], si)
			s.waiting++
			if s.waiting > s.maxQueue {
				s.collapse, s.stop = true, true
			}
			return
		}
		s.inflight[c]++
	}
	s.cur = si
	s.cl.arrive(s, si)
	s.flush()
}

// clientOf is the client that makes call i: at random, so that each client sees a Poisson
// stream; with a heavy client, client 0 makes heavyShare of the calls and the others split
// the rest evenly.
func (s *sim) clientOf(i int) int32 {
	if s.clients <= 1 {
		return 0
	}
	z := mix(s.cliKey + uint64(i))
	if s.heavyShare <= 0 {
		return int32(z % uint64(s.clients))
	}
	if float64(z>>11)/(1<<53) < s.heavyShare {
		return 0
	}
	return 1 + int32(mix(z)%uint64(s.clients-1))
}

// callEnded frees the client's place of a call that finished: the client's oldest waiting
// call takes it, and starts once the current event is handled (never inside a callback).
func (s *sim) callEnded(sl *slot) {
	c := sl.client
	if q := s.waitQ[c]; len(q) > 0 {
		next := q[0]
		s.waitQ[c] = q[:copy(q, q[1:])]
		s.waiting--
		s.slots[next].waiting = false
		s.starts = append(s.starts, next)
		return
	}
	s.inflight[c]--
}

// startWaiting starts the calls whose turn in their client came during the event just handled.
func (s *sim) startWaiting() {
	for len(s.starts) > 0 {
		si := s.starts[0]
		s.starts = s.starts[:copy(s.starts, s.starts[1:])]
		if s.slots[si].finished {
			continue
		}
		s.cur = si
		s.cl.arrive(s, si)
		s.flush()
	}
}

// giveUpWaiting fails the call in slot si, which reached its deadline while it waited in its
// client.
func (s *sim) giveUpWaiting(si int32) {
	sl := s.slots[si]
	q := s.waitQ[sl.client]
	if j := slices.Index(q, si); j >= 0 {
		s.waitQ[sl.client] = slices.Delete(q, j, j+1)
		s.waiting--
	}
	sl.waiting = false
	s.finishCall(si, context.DeadlineExceeded, false)
}

// growing reports, at the end of the arrivals, whether the queue never drained: no worker
// was idle during the second half of the arrivals and the queue is longer than at the half,
// and long (10 requests per worker) — or the queue is very long (50 requests per worker) and
// grew over the last two quarters. A stable queue, however loaded, empties now and then; one
// fed faster than it is served does not. A short run at a high load can keep every worker
// busy for its second half by chance, its queue a little longer at the end: that alone is no
// collapse.
func (s *sim) growing() bool {
	q := &s.queueAt
	end, half, q3 := q[checkpoints], q[checkpoints/2], q[checkpoints*3/4]
	if s.lastIdle < s.midT && end > half && end >= 10*s.workers*s.replicas {
		return true
	}
	return end >= 50*s.workers*s.replicas && end > q3 && q3 > half
}

// flush releases the slot of a call that finished in the callback just made. Releasing after
// the callback, not at Finish, keeps the slot valid for the actions that follow Finish.
func (s *sim) flush() {
	if si := s.release; si >= 0 {
		s.release = -1
		sl := s.slots[si]
		sl.timerGen++ // any timer still in the heap for this call is now stale
		s.free = append(s.free, si)
	}
	s.cur = -1
}

// dispatch gives idle workers the oldest live queued requests. It runs after each event, never
// from inside a client callback, so a callback is never re-entered for the same call.
func (s *sim) dispatch() {
	if s.idle == 0 || s.live == 0 {
		return
	}
	for rp := range s.replicas {
		s.dispatchReplica(rp)
	}
}

func (s *sim) dispatchReplica(rp int) {
	if s.pauseEvery > 0 && len(s.freeW[rp]) > 0 && s.rlive[rp] > 0 {
		if end := s.pausedUntil(rp, s.now); end > 0 {
			// A replica in a stop-the-world pause starts nothing (and says nothing) until it
			// ends; wake the dispatcher then.
			if s.wake[rp] != end {
				s.wake[rp] = end
				s.h.push(event{t: end, kind: evWake})
			}
			return
		}
	}
	for len(s.freeW[rp]) > 0 && s.rlive[rp] > 0 {
		r, _ := s.q[rp].pop()
		req := &s.reqs[r]
		if req.state == rqTomb {
			s.freeRequest(r)
			continue
		}
		s.live--
		s.rlive[rp]--
		free := s.freeW[rp]
		w := free[len(free)-1]
		s.freeW[rp] = free[:len(free)-1]
		s.idle--
		s.wreq[w] = r
		s.wgen[w]++
		s.setBusy(1)
		req.state, req.start, req.worker = rqService, s.now, w
		end := s.now + req.svc
		if s.pauseEvery > 0 {
			end = s.unpaused(rp, s.now, req.svc)
		}
		s.h.push(event{t: end, kind: evDone, idx: w, gen: s.wgen[w]})
		if req.measured {
			s.waitNs += s.now - req.enq
			s.waitN++
			if s.onService != nil && req.slot >= 0 {
				s.onService(s.slots[req.slot].idx, int(req.attempt), s.now-req.enq, req.svc)
			}
		}
		if si := req.slot; si >= 0 {
			s.cur = si
			s.cl.started(s, si, int(req.attempt))
			s.flush()
		}
	}
}

// pausedUntil is when the pause of replica rp in progress at t ends, or 0 when it is not paused.
func (s *sim) pausedUntil(rp int, t int64) int64 {
	ph := s.pausePhase[rp]
	if ph < 0 || t < ph {
		return 0
	}
	if end := ph + (t-ph)/s.pauseEvery*s.pauseEvery + s.pauseLen; t < end {
		return end
	}
	return 0
}

// pausedBetween is how long replica rp was in a stop-the-world pause between times a and b (a ≤ b).
func (s *sim) pausedBetween(rp int, a, b int64) int64 {
	ph := s.pausePhase[rp]
	if ph < 0 {
		return 0
	}
	// before(x) is the pause time in [ph, x): whole cycles, then the part of the last one.
	before := func(x int64) int64 {
		if x <= ph {
			return 0
		}
		d := x - ph
		return d/s.pauseEvery*s.pauseLen + min(d%s.pauseEvery, s.pauseLen)
	}
	return before(b) - before(a)
}

// unpaused is when a service of svc ns that starts at t on replica rp ends, the replica's
// stop-the-world pauses (Every apart, Length long, at the replica's phase) not counting as work.
// It takes constant time: after the window it starts in, the service spans whole windows of
// Every-Length ns of work, one per Every, then part of one (a loop over the windows took as
// long as svc/Every, minutes for a run with nanosecond pauses). It saturates at the end of
// time.
func (s *sim) unpaused(rp int, t, svc int64) int64 {
	ph := s.pausePhase[rp]
	if ph < 0 {
		return t + svc
	}
	every, length := s.pauseEvery, s.pauseLen
	// the pause that started last at or before t, and the next one
	k := (t - ph) / every
	if t < ph {
		k = -1
	}
	ps := ph + k*every
	if k >= 0 && t < ps+length {
		t = ps + length // inside a pause: nothing happens until it ends
	}
	next := ps + every
	if t+svc <= next {
		return t + svc
	}
	svc -= next - t
	t = later(next, length) // the start of a window of work
	// n whole windows of work, each Every long in time, then svc-n·work in the last one.
	work := every - length
	n := (svc - 1) / work
	if n > (math.MaxInt64-t)/every {
		return math.MaxInt64
	}
	return later(t+n*every, svc-n*work)
}

// release frees worker w of its request.
func (s *sim) freeWorker(w int32) {
	s.wreq[w] = -1
	rp := int(w) / s.workers
	s.freeW[rp] = append(s.freeW[rp], w)
	s.idle++
}

// answered tells the call's balancer that the request is no longer outstanding: the client got
// its answer (ok) or stopped waiting for it.
func (s *sim) answered(si int32, req *request, ok bool) {
	res := replica.Ignored // a loser the client stopped waiting for says nothing about its replica
	switch {
	case ok:
		res = replica.Success
	case s.timingOut:
		res = replica.Failure // it did not answer in time
	}
	s.answeredAs(si, req, res)
}

// answeredAs ends request req's pick with the result the replica's health logic learns.
func (s *sim) answeredAs(si int32, req *request, res replica.Result) {
	if s.replicas > 1 {
		s.choose[s.slots[si].client].done(vtime(s.now), int(req.replica), res)
	}
}

// complete ends the service of worker w's request at its natural end.
func (s *sim) complete(w int32) {
	r := s.wreq[w]
	if s.reports && s.reqs[r].slot >= 0 {
		s.loadReport(w, &s.reqs[r]) // taken while the request holds its worker, as a server's is
	}
	s.freeWorker(w)
	s.setBusy(-1)
	req := &s.reqs[r]
	si, k := req.slot, int(req.attempt)
	if si < 0 {
		if req.cancelling && req.measured { // its cancellation did not reach the server in time
			s.reached++
			s.serverNs += req.svc
			s.wastedNs += req.svc
		}
		s.freeRequest(r) // a discarded loser ("ignored" mode): already accounted when discarded
		return
	}
	if req.measured {
		s.reached++
		s.serverNs += req.svc
	}
	s.answered(si, req, true)
	s.slots[si].reqs[k] = -1
	s.freeRequest(r)
	if s.lagging {
		sl := s.slots[si]
		if d := s.lag.answer(s.now, k, sl.idx, s.now-sl.arrive); d > 0 {
			if req.measured {
				for len(sl.pending) <= k {
					sl.pending = append(sl.pending, 0)
				}
				sl.pending[k] = req.svc
			}
			if s.reports {
				for len(sl.late) <= k {
					sl.late = append(sl.late, lateReport{})
				}
				sl.late[k] = lateReport{s.reportFrom, s.report}
			}
			s.h.push(event{t: later(s.now, d), kind: evAnswer, idx: si, gen: answerGen(k, sl.idx)})
			return
		}
	}
	s.cur = si
	s.cl.done(s, si, k)
	s.flush()
}

func (s *sim) freeRequest(r int32) {
	s.reqs[r].state = rqFree
	s.reqs[r].cancelling = false
	s.reqs[r].gen++
	s.freeReq = append(s.freeReq, r)
}

// serviceTime draws attempt k of call i's service time from a stream keyed by (seed, i, k):
// the same request gets the same service time whatever happened before it, in every setup.
func (s *sim) serviceTime(i, k int) int64 {
	return int64(drawService(s.dist, &s.svcRng, s.svcRand, s.svcKey, i, k))
}

// drawService draws attempt k of call i's service time from d, on src (which r reads) seeded
// for the request from key, the run's service stream.
func drawService(d Distribution, src *rand.PCG, r *rand.Rand, key uint64, i, k int) time.Duration {
	src.Seed(mix(key+uint64(k)), mix(uint64(i)))
	return min(max(d.Sample(r), 0), maxService)
}

// ServiceTime is the service time a run with the given seed draws from d for attempt k of
// call i (in arrival order; attempt 0 is the first, the hedges and retries follow), whatever
// else happens in the run. A real server that draws its service times with it serves each
// request for as long as the simulated twin of its run with that seed does: the two share
// their random numbers, and a figure that depends on how many slow requests a few thousand
// calls drew (a utilisation, a p99.9) differs between them only by what each does with them.
//
// d must be a distribution a run accepts (Params.Service). ServiceTime has no error to
// return, so a nil d, or an Empirical or Mixture with nothing in it, panics with a sim:
// message naming the rule (the error a run returns for it), not an index out of range;
// it checks nothing that costs more than a comparison, so check a distribution from input
// (as ParseService and ReadDurations do) before serving with it.
func ServiceTime(d Distribution, seed uint64, call, attempt int) time.Duration {
	if d == nil {
		panic(errNilService.Error())
	}
	var src rand.PCG
	return drawService(d, &src, rand.New(&src), streamKey(seed, streamService), call, attempt)
}

// startAttempt sends attempt k of the call in slot si to the server: it joins the queue. It
// returns the replica it went to.
func (s *sim) startAttempt(si int32, k int) int {
	sl := s.slots[si]
	for len(sl.reqs) <= k {
		sl.reqs = append(sl.reqs, -1)
	}
	var r int32
	if n := len(s.freeReq); n > 0 {
		r = s.freeReq[n-1]
		s.freeReq = s.freeReq[:n-1]
	} else {
		s.reqs = append(s.reqs, request{})
		r = int32(len(s.reqs) - 1)
	}
	rp := 0
	if s.replicas > 1 {
		rp = s.choose[sl.client].pick(vtime(s.now), sl.used, mix(s.pickKey+uint64(sl.idx)))
	}
	svc := s.serviceTime(sl.idx, k)
	if s.svcMult != nil {
		svc = int64(min(float64(svc)*s.svcMult(rp, s.now), float64(maxService)))
	}
	s.reqs[r] = request{
		svc:      svc,
		enq:      s.now,
		slot:     si,
		attempt:  int32(k),
		worker:   -1,
		replica:  int32(rp),
		gen:      s.reqs[r].gen,
		state:    rqQueued,
		measured: sl.measured,
	}
	sl.reqs[k] = r
	if s.replicas > 1 {
		sl.used = append(sl.used, rp)
	}
	if s.onStart != nil {
		ej := false
		if s.replicas > 1 {
			set := s.choose[sl.client].(replicaSet).s
			ej = set.Healthy(vtime(s.now)) < s.replicas
			for i := range s.replicas {
				ej = ej || set.Stats(vtime(s.now), i).Trial
			}
		}
		s.onStart(sl.idx, k, rp, svc, ej)
	}
	if s.failures != nil {
		switch s.failingAt(rp, s.now) {
		case failRefuse: // the refusal comes back after a round trip; no worker is involved
			s.reqs[r].state = rqRefused
			s.h.push(event{t: s.now + refuseDelay, kind: evRefused, idx: r, gen: s.reqs[r].gen})
			return rp
		case failBlackhole: // the request vanishes: nothing answers it
			s.reqs[r].state = rqLost
			return rp
		}
	}
	s.q[rp].push(r)
	s.live++
	s.rlive[rp]++
	if s.live > s.maxQueue {
		s.collapse, s.stop = true, true
	}
	return rp
}

// cancelAttempt carries out the client's cancellation of attempt k of the call in slot si;
// slow is the core's word that the attempt lost a race past the call's threshold
// (hedge.Action.Slow), which its replica's health learns as replica.Slow. Cancelling an
// attempt that already completed (or was never started) does nothing.
func (s *sim) cancelAttempt(si int32, k int, slow bool) {
	sl := s.slots[si]
	s.dropLate(sl, k)
	if k < 0 || k >= len(sl.reqs) || sl.reqs[k] < 0 {
		return
	}
	r := sl.reqs[k]
	sl.reqs[k] = -1
	if slow && !s.timingOut {
		s.answeredAs(si, &s.reqs[r], replica.Slow)
	} else {
		s.answered(si, &s.reqs[r], false)
	}
	s.discard(r)
}

// dropLate accounts for attempt k's answer, given by the server but not yet got to by a busy
// client, being discarded: its service was wasted.
func (s *sim) dropLate(sl *slot, k int) {
	if k >= 0 && k < len(sl.pending) && sl.pending[k] > 0 {
		s.wastedNs += sl.pending[k]
		sl.pending[k] = 0
	}
}

// discard detaches request r from its call: its answer will not be used.
//
// Accounting (for measured calls): in "ignored" mode the server will serve a discarded request
// in full whatever happens, so it counts at once as reached, with its whole service time
// wasted. In "reaches" mode a queued request leaves the queue and never reached the server; one
// in service frees its worker now and counts as reached, with the time it was served wasted.
func (s *sim) discard(r int32) {
	req := &s.reqs[r]
	req.slot = -1
	if req.state == rqRefused || req.state == rqLost { // no server has it: nothing to cancel
		s.freeRequest(r)
		return
	}
	if !s.reaches {
		if req.measured {
			s.reached++
			s.serverNs += req.svc
			s.wastedNs += req.svc
		}
		return
	}
	if s.tieDelay > 0 { // the cancellation travels to the server first
		req.cancelling = true
		s.h.push(event{t: later(s.now, s.tieDelay), kind: evCancel, idx: r, gen: req.gen})
		return
	}
	s.cancelAtServer(r)
}

// cancelAtServer carries out the cancellation of request r at the server ("reaches" mode).
func (s *sim) cancelAtServer(r int32) {
	req := &s.reqs[r]
	req.cancelling = false
	switch req.state {
	case rqQueued:
		req.state = rqTomb
		s.live--
		s.rlive[req.replica]--
	case rqService:
		w := req.worker
		s.freeWorker(w)
		s.wgen[w]++
		s.setBusy(-1)
		if req.measured {
			// The work its worker did on it: a stop-the-world pause while it was in service
			// did none (a completed request counts its service time, pauses excluded, too).
			served := s.now - req.start
			if s.pauseEvery > 0 {
				served -= s.pausedBetween(int(req.replica), req.start, s.now)
			}
			s.reached++
			s.serverNs += served
			s.wastedNs += served
		}
		s.freeRequest(r)
	}
}

// armTimer (re)arms the call's single timer; an earlier pending timer becomes stale.
func (s *sim) armTimer(si int32, at int64) {
	sl := s.slots[si]
	sl.timerGen++
	if at < s.now {
		at = s.now
	}
	if s.lagging {
		at = later(at, s.lag.timer(at, sl.idx, at-sl.arrive))
	}
	s.h.push(event{t: at, kind: evTimer, idx: si, gen: sl.timerGen})
}

// Rejected reports whether a call that ended with err was refused before any of its attempts
// reached the server: the adaptive limit or an open breaker refused its first attempt. A call
// whose attempts failed and whose retry or hedge the limit then refused ended with an
// *hedge.AttemptsError whose Cause is ErrLimitExceeded: it reached the server, and is failed,
// not rejected (as hedgeotel counts it).
func Rejected(err error) bool {
	var ae *hedge.AttemptsError
	return (errors.Is(err, hedge.ErrLimitExceeded) || errors.Is(err, hedge.ErrBreakerOpen)) && !errors.As(err, &ae)
}

// finish records the end of the call in slot si; err is the call's error (nil: it succeeded).
// A call refused before reaching the server (the adaptive limit, an open breaker) counts as
// rejected; every failed call counts as failed. Attempts still attached are discarded (the
// client normally cancels them itself first).
func (s *sim) finish(si int32, err error) { s.finishCall(si, err, true) }

// finishCall is finish; started says the call left its client (it holds one of the client's
// places in flight, which it gives up).
func (s *sim) finishCall(si int32, err error, started bool) {
	sl := s.slots[si]
	if sl.finished {
		return
	}
	sl.finished = true
	if started && s.clientInFlight > 0 {
		s.callEnded(sl)
	}
	if s.onCallEnd != nil {
		s.onCallEnd(s.now, s.now-sl.arrive, err)
	}
	if sl.measured {
		s.outstanding--
		s.finishedN++
		if err != nil {
			s.failed++
			if Rejected(err) {
				s.rejected++
			}
		} else {
			s.lat = append(s.lat, s.now-sl.arrive)
			if s.onFinish != nil {
				s.onFinish(sl.idx, s.now-sl.arrive)
			}
		}
	}
	for k := range sl.pending {
		s.dropLate(sl, k)
	}
	for k, r := range sl.reqs {
		if r >= 0 {
			sl.reqs[k] = -1
			s.answered(si, &s.reqs[r], false)
			s.discard(r)
		}
	}
	s.release = si
}

// reachedUnfinished counts the measured requests that reached the server (as Run documents
// it) but had not finished when the run stopped: reached counts a request as it finishes, or
// as it is discarded, and a collapsed run stops with its queues full of them. Without them a
// collapsed point's requests per call read low (0.000 at 95 % load for a setup that hedged
// every call), the opposite of the load multiplying that made it collapse.
func (s *sim) reachedUnfinished() int {
	n := 0
	for i := range s.reqs {
		req := &s.reqs[i]
		if !req.measured {
			continue
		}
		switch req.state {
		case rqService:
			// A discarded request was counted when discarded, unless its cancellation is
			// still on its way ("reaches" mode with a tie delay).
			if req.slot >= 0 || req.cancelling {
				n++
			}
		case rqQueued:
			// With cancellation ignored a queued request will be served whatever happens;
			// a discarded one was counted when discarded.
			if !s.reaches && req.slot >= 0 {
				n++
			}
		}
	}
	return n
}

// measure fills the measured figures of p from the run.
func (s *sim) measure(p *Point) {
	p.Collapse = s.collapse
	p.Calls = s.arrivals
	if p.Calls > s.calls {
		p.Calls = s.calls
	}
	p.Events = s.events
	if !s.collapse && len(s.lat)+s.failed > 0 {
		slices.Sort(s.lat)
		p.P50Ms = quantileMs(s.lat, s.failed, 0.50)
		p.P99Ms = quantileMs(s.lat, s.failed, 0.99)
		p.P999Ms = quantileMs(s.lat, s.failed, 0.999)
	}
	p.MeanMs = MeanMs(s.lat, s.failed, s.collapse)
	// Per-call figures divide by the measured calls that arrived: all of them, finished, unless
	// the run collapsed (then the figures describe the calls up to the collapse).
	if n := s.measuredN; n > 0 {
		reached := s.reached
		if s.collapse {
			reached += int64(s.reachedUnfinished())
		}
		p.RequestsPerCall = float64(reached) / float64(n)
		p.HedgeRate = float64(s.hedges) / float64(n)
		p.RejectedPct = 100 * float64(s.rejected) / float64(n)
		p.FailedPct = 100 * float64(s.failed) / float64(n)
	}
	if s.hedges > 0 {
		p.HedgeWinRate = float64(s.wins) / float64(s.hedges)
	}
	if span := s.now - s.winStart; s.measuring && span > 0 {
		p.UtilisationPct = 100 * float64(s.area) / (float64(s.workers*s.replicas) * float64(span))
	}
	if s.serverNs > 0 {
		p.WastedWorkPct = 100 * float64(s.wastedNs) / float64(s.serverNs)
	}
	if s.waitN > 0 {
		p.MeanWaitMs = float64(s.waitNs) / float64(s.waitN) / 1e6
	}
}

// quantileMs is the exact q-quantile (nearest rank: the smallest value with at least q of the
// values at or below it), in milliseconds, of every measured call: the successes' latencies in
// sorted, then failed calls, each slower than any success (SIMULATION.md, "Counting every
// call"). A quantile that lands on a failed call is [Failed] (+Inf).
func quantileMs(sorted []int64, failed int, q float64) float64 {
	n := len(sorted) + failed
	i := int(math.Ceil(q*float64(n))) - 1
	i = max(0, min(i, n-1))
	if i >= len(sorted) {
		return Failed
	}
	return float64(sorted[i]) / float64(time.Millisecond)
}
