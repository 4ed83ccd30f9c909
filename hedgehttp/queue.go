package hedgehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/workqueue"
)

// AttemptHeader is the request header that marks a hedged copy on the wire: the
// [Transport] sets it to the attempt index ("1", "2", ...) on every attempt but
// the first, and a [Queue] reads it to put hedged copies in its low-priority
// lane. A server can also log it, to see how much of its traffic is hedges.
const AttemptHeader = "Hedge-Attempt"

// StartedStatus is the informational status a [Queue] sends when a worker starts a request
// (before the handler runs), and that a [Transport] reads as "the server has started this
// attempt" ([hedge.StartedService]): from then on the attempt is in service, not waiting in a
// queue, which is what tied requests and start-aware hedging need to know.
//
// It is 102 Processing: in the IANA registry, 102 means that the server has accepted the
// request and is working on it but has no answer yet, exactly this signal. 100 Continue
// already has a job (it answers Expect: 100-continue, and Go's client waits for it before
// sending a body), and 103 Early Hints asks browsers to preload the links it carries. Any HTTP
// client must accept and skip a 1xx it does not know (RFC 9110, section 15.2), and Go's does,
// over HTTP/1.1 and HTTP/2.
const StartedStatus = http.StatusProcessing

// StartSignalHeader is the request header with which a client asks for the [StartedStatus]
// signal. A [Transport] whose trigger reads start signals sends it on every attempt; a
// [Queue] sends the signal only to requests that carry it (and never to an HTTP/1.0 client,
// which must not receive a 1xx), so other clients see no change.
//
// A client must not ask for it on a request that waits for 100 Continue before sending its
// body (Expect: 100-continue), and a Transport does not: Go's HTTP/2 server sends no
// automatic 100 Continue on a stream that has had a 1xx already, so the body would wait out
// the client's ExpectContinueTimeout. (It also hides the Expect header from handlers, so the
// Queue cannot tell such a request apart.)
const StartSignalHeader = "Hedge-Start-Signal"

// ErrQueueConfig is wrapped by every error [NewQueue] returns for an invalid
// [QueueConfig].
var ErrQueueConfig = errors.New("hedgehttp: invalid QueueConfig")

// QueueConfig configures a [Queue]. The zero value is a valid configuration:
// every zero field means the default documented on it.
type QueueConfig struct {
	// Workers bounds how many requests run the handler at once. 0 means
	// 4 × runtime.GOMAXPROCS(0), read when the Queue is built: enough to keep
	// every core busy with a CPU-bound handler that also does a little I/O.
	// Handlers that mostly wait on other services want a larger value.
	// Negative is an error.
	Workers int

	// Queue bounds how many requests wait for a worker, in FIFO order. 0 means
	// the same as Workers (a request waits for at most about one service time
	// per worker's worth of work ahead of it: beyond that its client has
	// usually hedged, retried or given up). Negative means no waiting at all:
	// a request that finds every worker busy is answered 503 at once.
	Queue int

	// RetryAfter is the delay advertised in the Retry-After header of the 503
	// answered when the queue is full, rounded up to whole seconds. 0 means
	// 1 s. A hedging client ([Transport]) treats a 503 with Retry-After as an
	// overload signal and stops hedging for a while, which is the point: a
	// full queue must not attract more copies. Negative is an error.
	RetryAfter time.Duration

	// HedgedLast puts hedged attempts (requests whose [AttemptHeader] is
	// present and not "0") in a second, low-priority lane: a worker takes a
	// hedged request only when no first attempt is waiting, and when the queue
	// is full a first attempt pushes out the newest hedged waiter (answered
	// 503 with Retry-After) instead of being turned away. A hedge that waits
	// behind the queue cannot beat its primary anyway; it is worth serving
	// only from spare capacity. false (the default) treats every request alike.
	HedgedLast bool

	// NoStartSignal turns off the informational [StartedStatus] response that the queue
	// otherwise writes, the moment a worker starts a request, to requests carrying
	// [StartSignalHeader]. Turn it off when a middleware between the queue and the server
	// wraps the ResponseWriter and takes the first WriteHeader call for the final status
	// (http.TimeoutHandler and httptest.ResponseRecorder do, and some older logging and
	// metrics wrappers: a 500 behind them reaches the client as a 200), or when a proxy in front of the server
	// mishandles 1xx responses. Without the signal, clients fall back to hedging on
	// latency alone.
	NoStartSignal bool

	// NoLoadReport turns off the [LoadHeader] the queue otherwise adds to the response of
	// every request it runs (its queue length, busy workers and the request's own wait), and
	// to every 503 it answers because it is full, from which a [Transport] learns whether a
	// hedge would wait and where to send one. The
	// report wraps the handler's ResponseWriter (Flush, ReadFrom and
	// http.ResponseController pass through; a handler that type-asserts http.Hijacker,
	// http.Pusher or http.CloseNotifier directly needs it off).
	NoLoadReport bool

	// Observer, when non-nil, is called once for every queue event, on the
	// request's own goroutine, outside the queue's lock: concurrently, for
	// requests served at once, so it must be safe for concurrent use. It must be
	// fast and must not block: it runs on every request. nil means no events (Stats
	// still counts). A panic in it goes where a handler's panic goes (net/http
	// recovers it), and the queue stays consistent: a worker's slot is always
	// given back.
	Observer func(QueueEvent)
}

// QueueEvent is one observation passed to [QueueConfig.Observer].
type QueueEvent struct {
	// Kind is what happened to the request, in the words of the package workqueue the
	// queue is built on: workqueue.Admitted (its handler starts now; Wait is how long it
	// waited, 0 if it did not), workqueue.Rejected (every worker was busy and the queue was
	// full: answered 503 with Retry-After without running), workqueue.Abandoned (its context
	// was done while it waited: it left without running), workqueue.Evicted (a hedged
	// request in the low-priority lane pushed out by a first attempt, answered 503 with
	// Retry-After without running; see [QueueConfig.HedgedLast]) or workqueue.Finished (its
	// handler returned; Duration is how long it ran, Cancelled whether its context was done
	// by then).
	Kind workqueue.Outcome
	// Hedged: the request carried an [AttemptHeader] other than "0".
	Hedged bool
	// Wait: time spent in the queue (Admitted, Abandoned, Evicted); 0 for a
	// request that found a free worker.
	Wait time.Duration
	// Duration: how long the handler ran (Finished).
	Duration time.Duration
	// Cancelled: the request's context was done when the handler returned
	// (Finished).
	Cancelled bool
	// Queued: requests waiting in the queue right after the event.
	Queued int
}

// QueueStats is a snapshot of a [Queue]'s state and its counters since it was
// built. Counters only grow.
type QueueStats struct {
	Workers  int // the configured number of workers
	Capacity int // the configured queue length (0: no queue)

	Running      int // handlers running now
	Queued       int // requests waiting now, both lanes
	QueuedHedged int // of which hedged requests in the low-priority lane

	Admitted  uint64 // requests that ran the handler
	Rejected  uint64 // answered 503 because the queue was full
	Abandoned uint64 // left the queue without running: the client went away
	Evicted   uint64 // hedged waiters pushed out by first attempts (HedgedLast)
	Cancelled uint64 // handler runs whose context was done when they returned

	// WaitTotal is the summed queue wait of admitted requests (the mean wait
	// is WaitTotal / Admitted); WaitMax the longest single wait.
	WaitTotal time.Duration
	WaitMax   time.Duration
}

// Queue is server middleware: a bounded pool of workers with a FIFO queue in
// front of a handler, built so that a client's cancellation reaches the
// server. A request whose context is done while it waits (its client hedged
// elsewhere and cancelled this copy, or gave up) leaves the queue without
// running the handler; a request that is running sees the cancellation through
// r.Context(), which is net/http's own request context, passed through
// unchanged. Without this, a hedged copy that lost still costs the server a
// full service time, and hedging under load feeds the overload it meant to
// route around.
//
// When a worker starts a request whose client asked for it ([StartSignalHeader], sent by
// [Transport]), the queue first writes an informational [StartedStatus] response, then runs
// the handler (unless the client has gone by the time the signal is out: then the handler
// does not run): the client learns that this copy is in service, no longer queued. With
// [hedge.Tied], that is what cancels the copy waiting at another replica, which that
// replica's queue then drops without running it. The signal changes nothing for the
// handler, which writes its response as usual.
//
// Every response of a request the queue ran carries its load ([LoadHeader]: requests waiting,
// workers busy of total, the request's own wait), and so does every 503 it answers because it
// is full, from which a [Transport] learns, for every client, whether a hedge would wait
// behind a backlog and which replica can start one soonest ([QueueConfig.NoLoadReport] turns
// it off). Once the queue has built its load stream ([Queue.LoadStream]), the stream mounted
// behind it at [LoadStreamPath] gives its worker back as it starts: a stream lasts as long as
// its client keeps it.
//
// No goroutine is started per request: the handler goroutine net/http already
// runs for each request waits for its turn on its own channel, and a worker
// that finishes hands its slot directly to the head of the queue, so FIFO
// order holds and no late arrival barges ahead of a waiter.
//
// A note on HTTP/1.1: net/http notices a vanished client only once the
// request body has been read, so a queued request with an unread body learns
// that its client has gone only when it runs and reads the body. HTTP/2
// delivers stream resets at once, with or without a body.
//
// A Queue must be built with [NewQueue]; it is safe for concurrent use.
type Queue struct {
	next       http.Handler
	retryAfter string
	signal     bool
	report     bool // add LoadHeader to responses
	observer   func(QueueEvent)
	core       *workqueue.Queue
	// steady[b] is the report of b workers busy, nobody queued and no wait of the request's
	// own (see reportValue), once one has been made; up to maxSteadyReports of them.
	steady []atomic.Pointer[string]
	// streams is set once LoadStream has built the queue's stream: a request for
	// LoadStreamPath then runs on a lease the stream ends as it starts (see ServeHTTP).
	streams atomic.Bool
}

// NewQueue returns a [Queue] that runs next with the limits in cfg. It returns
// an error wrapping [ErrQueueConfig] that names the field and the rule when
// cfg is invalid.
func NewQueue(next http.Handler, cfg QueueConfig) (*Queue, error) {
	if next == nil {
		return nil, fmt.Errorf("%w: the handler must not be nil", ErrQueueConfig)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: QueueConfig.Workers must be >= 0, got %d", ErrQueueConfig, cfg.Workers)
	}
	if cfg.RetryAfter < 0 {
		return nil, fmt.Errorf("%w: QueueConfig.RetryAfter must be >= 0, got %v", ErrQueueConfig, cfg.RetryAfter)
	}
	core, err := workqueue.New(workqueue.Config{Workers: cfg.Workers, Queue: cfg.Queue, HedgedLast: cfg.HedgedLast})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrQueueConfig, err)
	}
	q := &Queue{next: next, signal: !cfg.NoStartSignal, report: !cfg.NoLoadReport, observer: cfg.Observer, core: core}
	// The load stream uses them too, with or without the per-response report.
	q.steady = make([]atomic.Pointer[string], min(core.Stats().Workers, maxSteadyReports)+1)
	ra := cfg.RetryAfter
	if ra == 0 {
		ra = time.Second
	}
	secs := ra / time.Second // rounded up below; ra + 1s − 1 would overflow for a RetryAfter near the largest Duration
	if ra%time.Second != 0 {
		secs++
	}
	q.retryAfter = strconv.FormatInt(int64(secs), 10)
	return q, nil
}

// Stats returns a snapshot of the queue's state and counters.
func (q *Queue) Stats() QueueStats {
	return QueueStats(q.core.Stats())
}

// isHedged reports whether r is a hedged copy: its AttemptHeader is present
// and not "0".
func isHedged(r *http.Request) bool {
	v := r.Header[AttemptHeader]
	return len(v) > 0 && v[0] != "" && v[0] != "0"
}

// ServeHTTP runs the handler when a worker is free, waits in the queue when
// none is, and answers 503 with Retry-After when the queue is full.
func (q *Queue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if q.core == nil {
		panic("hedgehttp: Queue used without NewQueue")
	}
	hedged := isHedged(r)
	a := q.core.Acquire(r.Context(), hedged)
	switch a.Outcome {
	case workqueue.Admitted:
		// A request for the load stream's path, once this queue has built its stream, may be
		// the stream mounted behind the queue (a Queue that wraps the whole mux): it runs as
		// any request, but with a lease the stream ends as it starts (leaseKey), since a
		// stream lasts as long as its client keeps it, and through a worker it would hold the
		// worker for good. Another handler at that path keeps its worker as any handler does.
		leased := q.streams.Load() && r.URL.Path == LoadStreamPath
		q.run(w, r, QueueEvent{Kind: workqueue.Admitted, Hedged: hedged, Wait: a.Wait}, a.Queued, leased)
	case workqueue.Rejected:
		q.emit(QueueEvent{Kind: workqueue.Rejected, Hedged: hedged}, a.Queued)
		q.overloaded(w)
	case workqueue.Evicted:
		q.emit(QueueEvent{Kind: workqueue.Evicted, Hedged: true, Wait: a.Wait}, a.Queued)
		q.overloaded(w)
	default: // workqueue.Abandoned
		q.emit(QueueEvent{Kind: workqueue.Abandoned, Hedged: hedged, Wait: a.Wait}, a.Queued)
		q.gone(w)
	}
}

// run reports the admission, calls the handler on a slot the caller holds and
// releases the slot when the handler returns, even if it or the observer
// panics (net/http recovers handler panics, so a slot lost to one would never
// come back).
func (q *Queue) run(w http.ResponseWriter, r *http.Request, admitted QueueEvent, queued int, leased bool) {
	hedged := admitted.Hedged
	var start time.Time
	if q.observer != nil {
		start = time.Now()
	}
	var l *lease
	if leased {
		l = &lease{q: q, r: r, hedged: hedged, start: start}
		r = r.WithContext(context.WithValue(r.Context(), leaseKey{}, l))
	}
	defer func() {
		if l != nil {
			l.end() // unless the load stream has ended it already
			return
		}
		q.finish(r, hedged, start)
	}()
	q.emit(admitted, queued)
	if q.signal && wantsStartSignal(r) {
		// The client learns that this request is in service, not queued: a copy of it
		// elsewhere can now be cancelled (tied requests), and a hedge of it is a hedge of a
		// straggler.
		w.WriteHeader(StartedStatus)
		if r.Context().Err() != nil {
			// The client went away while the signal was written (over HTTP/2, a reset of the
			// stream: a tied copy whose twin started first). Go's HTTP/2 server may then still
			// be encoding the 1xx from the response's header map on a goroutine of its own
			// (golang/go#67940), so a handler that set a header now would race with it, a
			// concurrent map write that can crash the process; and nobody would read its answer.
			return
		}
	}
	if q.report {
		q.serveReporting(w, r, admitted.Wait)
		return
	}
	q.next.ServeHTTP(w, r)
}

// finish gives back the worker r held, and reports its end to the observer.
func (q *Queue) finish(r *http.Request, hedged bool, start time.Time) {
	cancelled := r.Context().Err() != nil
	queued := q.core.Release(cancelled)
	if q.observer != nil {
		q.emit(QueueEvent{Kind: workqueue.Finished, Hedged: hedged, Duration: time.Since(start), Cancelled: cancelled}, queued)
	}
}

// leaseKey is the context key of a request's *lease: set on a request for LoadStreamPath that
// a queue with a load stream runs.
type leaseKey struct{}

// lease is the worker held by a request that may be the queue's load stream, which gives it
// back as it starts (endLease); the queue gives it back when the handler returns otherwise.
type lease struct {
	q      *Queue
	r      *http.Request
	hedged bool
	start  time.Time
	ended  atomic.Bool
}

// end gives the worker back, the first time it is called.
func (l *lease) end() {
	if l.ended.CompareAndSwap(false, true) {
		l.q.finish(l.r, l.hedged, l.start)
	}
}

// endLease gives back the worker of q that r holds, when r holds one on a lease of q's: the
// load stream calls it as it starts.
func endLease(q *Queue, r *http.Request) {
	if l, ok := r.Context().Value(leaseKey{}).(*lease); ok && l.q == q {
		l.end()
	}
}

// wantsStartSignal reports whether r asked for the start signal and may be sent one: a 1xx
// must not go to an HTTP/1.0 client.
func wantsStartSignal(r *http.Request) bool {
	_, ok := r.Header[StartSignalHeader]
	return ok && r.ProtoAtLeast(1, 1)
}

// emit calls the observer with the queue depth filled in.
func (q *Queue) emit(e QueueEvent, queued int) {
	if q.observer == nil {
		return
	}
	e.Queued = queued
	q.observer(e)
}

// overloaded answers 503 with Retry-After: the queue is full. The answer carries the queue's
// load too (as hedgegrpc's queue reports on the calls it turns away): it is the report that
// says most, and without it the replica's latest, from a response that left while the queue
// was shorter, would keep counting for its clients for hedge.LoadMaxAge.
func (q *Queue) overloaded(w http.ResponseWriter) {
	if q.report {
		w.Header()[LoadHeader] = []string{q.reportValue(q.core.Counts(0))}
	}
	w.Header().Set("Retry-After", q.retryAfter)
	http.Error(w, "hedgehttp: server queue full", http.StatusServiceUnavailable)
}

// gone answers a request whose context was done while it waited. The client
// will most likely never read it; it exists so that logs show a 503 rather
// than an empty 200.
func (q *Queue) gone(w http.ResponseWriter) {
	http.Error(w, "hedgehttp: request cancelled while queued", http.StatusServiceUnavailable)
}
