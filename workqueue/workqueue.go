// Package workqueue is the admission core shared by the servers' queue middlewares
// (hedgehttp.Queue, hedgegrpc.Queue): a bounded number of workers with a bounded FIFO wait
// list in front of them, and an optional second, low-priority lane for hedged copies.
//
// It knows nothing of a protocol. A server layer asks [Queue.Acquire] for a worker's slot on
// the request's own goroutine, runs the handler when the answer is [Admitted], calls
// [Queue.Release] when the handler returns, and turns every other [Outcome] into its
// protocol's answer (HTTP 503 with Retry-After, gRPC RESOURCE_EXHAUSTED with a pushback
// trailer, ...). It starts no goroutine: a request waits on its own goroutine, and a
// finishing worker hands its slot straight to the head of the wait list, so FIFO order holds
// and no late arrival barges ahead of a waiter.
//
// The point of waiting on the request's context is hedging: a copy that lost, cancelled by
// its client while it waits, leaves the list without ever costing a service time.
package workqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// ErrConfig is wrapped by every error [New] returns for an invalid [Config].
var ErrConfig = errors.New("workqueue: invalid Config")

// Config configures a [Queue]. The zero value is a valid configuration: every zero field
// means the default documented on it.
type Config struct {
	// Workers bounds how many requests hold a slot at once. 0 means 4 × runtime.GOMAXPROCS(0),
	// read when the Queue is built: enough to keep every core busy with a CPU-bound handler
	// that also does a little I/O. Negative is an error.
	Workers int

	// Queue bounds how many requests wait for a slot, both lanes together. 0 means the same
	// as Workers (a request waits for at most about one service time per worker's worth of
	// work ahead of it: beyond that its client has usually hedged, retried or given up).
	// Negative means no waiting at all: a request that finds every worker busy is
	// [Rejected] at once.
	Queue int

	// HedgedLast puts requests acquired as hedged in a second, low-priority lane: a slot goes
	// to a hedged request only when no first attempt waits, and when the wait list is full a
	// first attempt pushes out the newest hedged waiter ([Evicted]) instead of being
	// [Rejected]. A hedge that waits behind the queue cannot beat its primary anyway; it is
	// worth serving only from spare capacity. false (the default) treats every request alike.
	HedgedLast bool
}

// Outcome says what happened to a request in a queue: how its call to [Queue.Acquire] ended,
// or, for a server layer's observers, that its handler returned ([Finished]). It is the one
// vocabulary of the queues built on this package (hedgehttp.QueueEvent and its kin).
type Outcome uint8

const (
	// Admitted: the caller holds a worker's slot; it runs its handler and must then call
	// [Queue.Release] exactly once.
	Admitted Outcome = iota + 1
	// Rejected: every worker was busy and the wait list was full. The caller holds no slot.
	Rejected
	// Evicted: the request waited in the hedged lane and a first attempt pushed it out
	// ([Config.HedgedLast]). The caller holds no slot.
	Evicted
	// Abandoned: the request's context was done before it got to run. The caller holds no
	// slot (one handed over at the same moment has been passed on already).
	Abandoned
	// Finished: the handler of an admitted request returned and its slot was given back.
	// Acquire never returns it; a server layer reports it to its observer.
	Finished
)

var outcomeNames = [...]string{
	Admitted:  "admitted",
	Rejected:  "rejected",
	Evicted:   "evicted",
	Abandoned: "abandoned",
	Finished:  "finished",
}

// String returns the outcome's lower-case name, e.g. "evicted".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Admission is what [Queue.Acquire] returns.
type Admission struct {
	Outcome Outcome
	// Wait is how long the request waited in the list; 0 when it did not wait (it found a
	// free worker, or was rejected at once).
	Wait time.Duration
	// Queued is how many requests wait, both lanes, right after the outcome: the depth an
	// observer reports.
	Queued int
}

// Stats is a snapshot of a [Queue]'s state and its counters since it was built. Counters
// only grow.
type Stats struct {
	Workers  int // the configured number of workers
	Capacity int // the configured wait-list length (0: no waiting)

	Running      int // slots held now
	Queued       int // requests waiting now, both lanes
	QueuedHedged int // of which hedged requests in the low-priority lane

	Admitted  uint64 // acquisitions that got a slot
	Rejected  uint64 // turned away because the wait list was full
	Abandoned uint64 // left without running: the context was done
	Evicted   uint64 // hedged waiters pushed out by first attempts (HedgedLast)
	Cancelled uint64 // releases whose request's context was done by then

	// WaitTotal is the summed wait of admitted requests (the mean wait is
	// WaitTotal / Admitted); WaitMax the longest single wait.
	WaitTotal time.Duration
	WaitMax   time.Duration
}

// Queue hands out a bounded number of worker slots in FIFO order. Build it with [New] (the
// zero value panics on use); it is safe for concurrent use.
type Queue struct {
	workers    int
	capacity   int
	hedgedLast bool

	mu      sync.Mutex
	running int
	first   waitList // first attempts, or every request without HedgedLast
	hedged  waitList // hedged attempts, with HedgedLast
	stats   Stats

	// the admission rate, for Load: recomputed at most once per rateEvery
	rateAt time.Time
	rateN  uint64
	qps    float64
	rated  bool      // a whole window has been measured
	early  time.Time // when the rate was last estimated within the first window
}

// New returns a [Queue] with the limits in cfg, or an error wrapping [ErrConfig] that names
// the field and the rule.
func New(cfg Config) (*Queue, error) {
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: Workers must be >= 0, got %d", ErrConfig, cfg.Workers)
	}
	q := &Queue{workers: cfg.Workers, hedgedLast: cfg.HedgedLast}
	if q.workers == 0 {
		q.workers = 4 * runtime.GOMAXPROCS(0)
	}
	switch {
	case cfg.Queue == 0:
		q.capacity = q.workers
	case cfg.Queue > 0:
		q.capacity = cfg.Queue
	}
	q.stats.Workers, q.stats.Capacity = q.workers, q.capacity
	return q, nil
}

// Stats returns a snapshot of the queue's state and counters.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	s := q.stats
	s.Running = q.running
	s.Queued = q.first.n + q.hedged.n
	s.QueuedHedged = q.hedged.n
	q.mu.Unlock()
	return s
}

// Queued returns how many requests wait now, both lanes.
func (q *Queue) Queued() int {
	q.mu.Lock()
	n := q.first.n + q.hedged.n
	q.mu.Unlock()
	return n
}

// waiter is one request waiting for a slot. Its fields other than ready are guarded by
// Queue.mu.
type waiter struct {
	ready      chan struct{} // closed when state leaves waiting
	state      waiterState
	prev, next *waiter
}

type waiterState uint8

const (
	waiting waiterState = iota
	granted             // a worker's slot was handed to this waiter
	evicted             // pushed out of the hedged lane by a first attempt
	left                // removed itself after its context was done
)

// waitList is an intrusive doubly-linked FIFO list: removing a waiter from its middle (it
// left) costs no search and no allocation.
type waitList struct {
	head, tail *waiter
	n          int
}

func (l *waitList) pushBack(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.n--
}

// Acquire takes a worker's slot for a request, waiting in FIFO order for one when every
// worker is busy, until ctx is done. hedged says the request is a hedged copy (it goes to the
// low-priority lane when [Config.HedgedLast] is set, and is otherwise treated like any
// other). Only an [Admitted] outcome holds a slot, which the caller gives back with
// [Queue.Release].
//
// A request that finds a free worker takes it without allocating; a free worker implies an
// empty wait list, since a finishing worker hands its slot on rather than freeing it. A
// request whose ctx is done already is [Abandoned], free worker or not.
func (q *Queue) Acquire(ctx context.Context, hedged bool) Admission {
	hedged = hedged && q.hedgedLast
	q.mu.Lock()
	if q.workers == 0 {
		q.mu.Unlock()
		panic("workqueue: Queue used without New")
	}
	switch {
	case ctx.Err() != nil:
		// The client is gone: even a free worker would run its handler for nobody. On a busy
		// server that is common (a hedge's loser cancelled as it arrived, a client that hung
		// up while the server was slow to read its request), and without a free worker it
		// would only abandon the place it took. (Err is an atomic load, and allocates
		// nothing, where Done may make the context's channel.)
		q.stats.Abandoned++
		queued := q.first.n + q.hedged.n
		q.mu.Unlock()
		return Admission{Outcome: Abandoned, Queued: queued}
	case q.running < q.workers:
		q.running++
		q.stats.Admitted++
		q.mu.Unlock()
		return Admission{Outcome: Admitted}
	case q.first.n+q.hedged.n >= q.capacity:
		if hedged || q.hedged.n == 0 {
			q.stats.Rejected++
			queued := q.first.n + q.hedged.n
			q.mu.Unlock()
			return Admission{Outcome: Rejected, Queued: queued}
		}
		// A first attempt pushes out the newest hedged waiter: the one that would wait
		// longest, and whose primary is most likely still running.
		victim := q.hedged.tail
		q.hedged.remove(victim)
		victim.state = evicted
		q.stats.Evicted++
		close(victim.ready)
	}
	w := &waiter{ready: make(chan struct{})}
	lane := &q.first
	if hedged {
		lane = &q.hedged
	}
	lane.pushBack(w)
	q.mu.Unlock()
	start := time.Now()

	select {
	case <-w.ready:
	case <-ctx.Done():
	}

	q.mu.Lock()
	switch w.state {
	case waiting:
		// The context is done and no slot was handed over: leave the list.
		lane.remove(w)
		w.state = left
		q.stats.Abandoned++
		queued := q.first.n + q.hedged.n
		q.mu.Unlock()
		return Admission{Outcome: Abandoned, Wait: time.Since(start), Queued: queued}
	case evicted:
		queued := q.first.n + q.hedged.n
		q.mu.Unlock()
		return Admission{Outcome: Evicted, Wait: time.Since(start), Queued: queued}
	}
	// Granted: this request holds a worker's slot.
	if ctx.Err() != nil {
		// The slot and the cancellation arrived together: the client is gone, so pass the
		// slot on unused.
		q.stats.Abandoned++
		q.release()
		queued := q.first.n + q.hedged.n
		q.mu.Unlock()
		return Admission{Outcome: Abandoned, Wait: time.Since(start), Queued: queued}
	}
	wait := time.Since(start)
	q.stats.Admitted++
	q.stats.WaitTotal += wait
	if wait > q.stats.WaitMax {
		q.stats.WaitMax = wait
	}
	queued := q.first.n + q.hedged.n
	q.mu.Unlock()
	return Admission{Outcome: Admitted, Wait: wait, Queued: queued}
}

// Release gives back the slot of an [Admitted] request whose handler returned: it goes to the
// head of the wait list (first attempts before hedged ones), or is freed when nobody waits.
// cancelled says the request's context was done by then (counted in [Stats].Cancelled). It
// returns how many requests wait right after.
//
// Call it exactly once per admission, from a deferred function if the handler may panic: a
// slot that is never released is a worker lost for good. A Release while no slot is held
// panics.
func (q *Queue) Release(cancelled bool) (queued int) {
	q.mu.Lock()
	if q.running <= 0 {
		// A release with no slot held would make room for one more request than there are
		// workers, for good.
		q.mu.Unlock()
		panic("workqueue: Release without an admitted request")
	}
	if cancelled {
		q.stats.Cancelled++
	}
	q.release()
	queued = q.first.n + q.hedged.n
	q.mu.Unlock()
	return queued
}

// release hands a slot to the head of the wait list, or frees it. q.mu must be held.
func (q *Queue) release() {
	var w *waiter
	switch {
	case q.first.head != nil:
		w = q.first.head
		q.first.remove(w)
	case q.hedged.head != nil:
		w = q.hedged.head
		q.hedged.remove(w)
	default:
		q.running--
		return
	}
	w.state = granted
	close(w.ready)
}
