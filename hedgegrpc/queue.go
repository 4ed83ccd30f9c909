package hedgegrpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ErrQueueConfig is wrapped by every error [NewQueue] returns for an invalid [QueueConfig].
var ErrQueueConfig = errors.New("hedgegrpc: invalid QueueConfig")

// QueueConfig configures a [Queue]. The zero value is a valid configuration: every zero field
// means the default documented on it.
type QueueConfig struct {
	// Workers bounds how many calls run their handler at once. 0 means
	// 4 × runtime.GOMAXPROCS(0), read when the Queue is built. Negative is an error.
	Workers int

	// Queue bounds how many calls wait for a worker, in FIFO order. 0 means the same as
	// Workers. Negative means no waiting at all: a call that finds every worker busy is
	// answered RESOURCE_EXHAUSTED at once.
	Queue int

	// Pushback is the delay sent in the [PushbackKey] trailer of the RESOURCE_EXHAUSTED
	// answered when the queue is full, rounded up to whole milliseconds (the trailer's unit:
	// a pushback of 0 would ask the client to retry at once), and at most 2³¹−1 ms, about
	// 24.8 days (gRFC A6 makes the trailer a signed 32-bit integer, and reads one it cannot
	// parse as "do not retry"). 0 means 1s. A hedging client ([Interceptor]) pauses
	// hedging for that long: a full queue must not attract more copies. Negative is an
	// error.
	Pushback time.Duration

	// HedgedLast puts hedged copies and retries (calls whose [AttemptKey] metadata is present
	// and not "0") in a second, low-priority lane: a worker takes one only when no first
	// attempt is waiting, and when the queue is full a first attempt pushes out the newest
	// of them (answered RESOURCE_EXHAUSTED with the pushback) instead of being turned away.
	// A copy that waits behind the queue cannot beat its primary anyway; it is worth serving
	// only from spare capacity. false (the default) treats every call alike.
	HedgedLast bool

	// QueueHealthCheck makes the health service's Check (grpc.health.v1) wait for a worker
	// like any other call. false (the default): a Check runs at once, without a worker, and
	// carries no load report. Kubernetes' gRPC probes and most load balancers' health checks
	// call Check: queued behind a backlog it would time out, or be answered
	// RESOURCE_EXHAUSTED when the queue is full, and a server that is only busy would be
	// restarted or taken out of service, its capacity gone when the fleet needs it most. Set
	// it when Check stands for real work, as in a benchmark. (The health service's Watch
	// never takes a worker: see [Queue.StreamServer].)
	QueueHealthCheck bool
}

// QueueStats is a snapshot of a [Queue]'s state and its counters since it was built.
type QueueStats struct {
	Workers  int // the configured number of workers
	Capacity int // the configured queue length (0: no queue)

	Running      int // handlers running now
	Queued       int // calls waiting now, both lanes
	QueuedHedged int // of which copies in the low-priority lane (HedgedLast)

	Admitted  uint64 // calls that ran the handler
	Rejected  uint64 // answered RESOURCE_EXHAUSTED because the queue was full
	Abandoned uint64 // left the queue without running: the client cancelled or went away
	Evicted   uint64 // copies pushed out of the low-priority lane by first attempts (HedgedLast)
	Cancelled uint64 // handler runs whose context was done when they returned
}

// Queue is a bounded pool of workers with a FIFO queue in front of a server's handlers, the
// gRPC counterpart of hedgehttp.Queue, built so that a client's cancellation reaches the
// server: a call cancelled while it waits (a hedged copy that lost, or a client that gave up)
// leaves the queue without running its handler, and a running one sees its context
// cancelled. When the queue is full the call is answered RESOURCE_EXHAUSTED with a pushback
// trailer, which a hedging client treats as "stop hedging for a while".
//
// Install [Queue.UnaryServer] (and [Queue.StreamServer] to bound streams as well) as a server
// interceptor, or all of it with its load reports through [Queue.ServerOptions] (an ORCA
// per-call load report on every call, which the hedging balancer and any ORCA-aware client
// read), or with [Queue.RegisterOOB] beside it (the same load on an ORCA out-of-band stream,
// a report per connection per interval instead of one per call); chain [StartSignal] after it. No goroutine is started per call: the call's
// own goroutine waits for its turn, and a finishing worker hands its slot to the head of the
// queue. Build it with [NewQueue]; it is safe for concurrent use. The zero Queue is not
// usable: its interceptors, ServerOptions and Stats panic with a message naming NewQueue,
// and RegisterOOB returns an error wrapping [ErrQueueConfig].
type Queue struct {
	trailer    metadata.MD
	hedgedLast bool // read the AttemptKey metadata only when it matters
	queueCheck bool // QueueHealthCheck
	core       *workqueue.Queue
	reports    reportCache // the trailers of the latest load reports (load.go)
	oob        oobStop     // ends the out-of-band report streams (StopOOB, oob.go)
}

// errNoQueue is the message of a Queue that NewQueue did not build.
const errNoQueue = "hedgegrpc: Queue used without NewQueue"

// mustBeBuilt panics when NewQueue did not build q: a zero Queue has no workers, and would
// fail on a nil pointer in the middle of a call.
func (q *Queue) mustBeBuilt() {
	if q == nil || q.core == nil {
		panic(errNoQueue)
	}
}

// isCopy reports whether the call is a hedged copy or a retry: its AttemptKey metadata is
// present and not "0".
func isCopy(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(AttemptKey)
	return len(v) > 0 && v[0] != "" && v[0] != "0"
}

// NewQueue returns a [Queue] with the limits in cfg, or an error wrapping [ErrQueueConfig]
// that names the field and the rule.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: QueueConfig.Workers must be >= 0, got %d", ErrQueueConfig, cfg.Workers)
	}
	if cfg.Pushback < 0 {
		return nil, fmt.Errorf("%w: QueueConfig.Pushback must be >= 0, got %v", ErrQueueConfig, cfg.Pushback)
	}
	core, err := workqueue.New(workqueue.Config{Workers: cfg.Workers, Queue: cfg.Queue, HedgedLast: cfg.HedgedLast})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrQueueConfig, err)
	}
	pb := cfg.Pushback
	if pb == 0 {
		pb = time.Second
	}
	// Rounded up, and bounded before rounding: pb + 1ms − 1 would overflow for a Pushback
	// near the largest Duration, and send a negative pushback.
	ms := int64(math.MaxInt32)
	if pb < math.MaxInt32*time.Millisecond {
		ms = int64((pb + time.Millisecond - 1) / time.Millisecond)
	}
	return &Queue{
		trailer:    metadata.Pairs(PushbackKey, strconv.FormatInt(ms, 10)),
		hedgedLast: cfg.HedgedLast,
		queueCheck: cfg.QueueHealthCheck,
		core:       core,
	}, nil
}

// Stats returns a snapshot of the queue's state and counters.
func (q *Queue) Stats() QueueStats {
	q.mustBeBuilt()
	s := q.core.Stats()
	return QueueStats{
		Workers: s.Workers, Capacity: s.Capacity,
		Running: s.Running, Queued: s.Queued, QueuedHedged: s.QueuedHedged,
		Admitted: s.Admitted, Rejected: s.Rejected, Abandoned: s.Abandoned,
		Evicted: s.Evicted, Cancelled: s.Cancelled,
	}
}

// UnaryServer is a grpc.UnaryServerInterceptor that runs the handler when a worker is free,
// waits in the queue when none is, and answers RESOURCE_EXHAUSTED with a pushback trailer
// when the queue is full.
func (q *Queue) UnaryServer(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	q.mustBeBuilt()
	if q.probe(info) {
		return handler(ctx, req) // see QueueConfig.QueueHealthCheck
	}
	wait, err := q.acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	defer q.done(ctx, wait)
	return handler(ctx, req)
}

// StreamServer is [Queue.UnaryServer] for streaming calls: a stream holds its worker until
// its handler returns. Two streams that a client keeps open for as long as its connection
// lives pass without one (see bypassesQueue): the ORCA out-of-band stream
// ([Queue.RegisterOOB]) and the health service's Watch, which gRPC's client-side health
// checking opens on every connection. Held, each would take a worker for good, and as many
// connections as workers would leave none for calls.
func (q *Queue) StreamServer(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	q.mustBeBuilt()
	if bypassesQueue(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx := ss.Context()
	wait, err := q.acquire(ctx, false)
	if err != nil {
		return err
	}
	defer q.done(ctx, wait)
	return handler(srv, ss)
}

// healthWatchMethod is the health service's Watch (grpc.health.v1), the stream gRPC's
// client-side health checking keeps open on each connection.
const healthWatchMethod = "/grpc.health.v1.Health/Watch"

// healthCheckMethod is the health service's Check (grpc.health.v1), which probes call.
const healthCheckMethod = "/grpc.health.v1.Health/Check"

// probe reports whether a unary call runs without a worker: a health Check, unless
// QueueConfig.QueueHealthCheck says otherwise. info may be nil (an interceptor called by hand).
func (q *Queue) probe(info *grpc.UnaryServerInfo) bool {
	return !q.queueCheck && info != nil && info.FullMethod == healthCheckMethod
}

// bypassesQueue reports whether a stream runs without a worker: the connection-long streams
// that carry a server's state rather than work (StreamServer).
func bypassesQueue(fullMethod string) bool {
	return fullMethod == oobMethod || fullMethod == healthWatchMethod
}

// acquire takes a worker's slot, waiting in FIFO order for one, and returns how long the call
// waited, or the status error to answer when the call must not run; own is as for report.
func (q *Queue) acquire(ctx context.Context, own bool) (time.Duration, error) {
	switch a := q.core.Acquire(ctx, q.hedgedLast && isCopy(ctx)); a.Outcome {
	case workqueue.Admitted:
		return a.Wait, nil
	case workqueue.Abandoned:
		return 0, status.FromContextError(ctx.Err()).Err()
	default: // workqueue.Rejected, workqueue.Evicted
		return 0, q.overloaded(ctx, own)
	}
}

// overloaded is the answer of a call the queue has no room for: RESOURCE_EXHAUSTED with the
// pushback trailer, and the queue's load report as on any call (report): a full queue is the
// load a client most needs to hear of.
func (q *Queue) overloaded(ctx context.Context, own bool) error {
	q.report(ctx, 0, own)
	_ = grpc.SetTrailer(ctx, q.trailer)
	return status.Error(codes.ResourceExhausted, "hedgegrpc: server queue full")
}

// done releases the slot of a call whose handler returned, adding the queue's load to the
// call's ORCA report when the server collects one (load.go).
func (q *Queue) done(ctx context.Context, wait time.Duration) {
	q.doneReporting(ctx, wait, false)
}

// doneReporting is done; with own, the call carries the queue's report even where no ORCA
// recorder collects one ([Queue.ServerOptions]).
func (q *Queue) doneReporting(ctx context.Context, wait time.Duration, own bool) {
	q.report(ctx, wait, own)
	q.core.Release(ctx.Err() != nil)
}
