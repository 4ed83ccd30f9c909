package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/sim"
	"github.com/hedgekit/hedge/workqueue"
)

// callHeader carries a call's index (in arrival order) to the server, so the server draws the
// same service time for the same request in every setup, and counts only measured calls.
const callHeader = "Hedgeload-Call"

// Protocols.
const (
	HTTP1 = "http/1.1"
	HTTP2 = "http/2" // cleartext HTTP/2 (h2c with prior knowledge)
)

// maxAttempts bounds the attempts per call the server keeps accounts for.
const maxAttempts = 4

// server is one loopback HTTP or gRPC server (one replica): a queue (hedgehttp.Queue or
// hedgegrpc.Queue) with W workers in front of a handler that holds its worker for a service
// time drawn from the model's distribution.
type server struct {
	stop  func() // stops the server at once
	ln    net.Listener
	addr  string // host:port on the loopback interface
	stats func() workqueue.Stats
	acct  *accounts
	done  chan struct{} // closed when Serve returns
}

// accounts is what the servers of one point saw, shared by its replicas.
type accounts struct {
	warm    int // calls with a lower index are not measured
	calls   int // calls with this index or higher are not measured
	workers int // across replicas

	arrived atomic.Int64   // attempts of measured calls the server received
	reached atomic.Int64   // attempts of measured calls a worker started
	served  []atomic.Int64 // by call × maxAttempts + attempt: ns the attempt held a worker
	// t0 is the accounts' clock origin; arrivedAt and startedAt (by call × maxAttempts +
	// attempt) are when the server received the attempt and when a worker started it, in ns
	// since t0 (0: never).
	t0                   time.Time
	arrivedAt, startedAt []atomic.Int64

	mu    sync.Mutex // guards the busy-time integral
	busy  int
	last  time.Time
	area  float64 // worker-nanoseconds since the first event
	first time.Time
}

// newAccounts keeps accounts for total calls, of which those in [warm, calls) are measured.
func newAccounts(total, warm, calls, workers int) *accounts {
	return &accounts{warm: warm, calls: calls, workers: workers, served: make([]atomic.Int64, total*maxAttempts),
		t0: time.Now(), arrivedAt: make([]atomic.Int64, total*maxAttempts), startedAt: make([]atomic.Int64, total*maxAttempts)}
}

// arrive notes that the server received attempt of call, now.
func (a *accounts) arrive(call, attempt int) {
	if call >= a.warm && call < a.calls {
		a.arrived.Add(1)
	}
	if k := call*maxAttempts + attempt; k < len(a.arrivedAt) {
		a.arrivedAt[k].Store(int64(time.Since(a.t0)))
	}
}

// busyDelta adds d to the number of busy workers at now, integrating busy time.
func (a *accounts) busyDelta(now time.Time, d int) {
	a.mu.Lock()
	if a.last.IsZero() {
		a.first = now
	} else {
		a.area += float64(a.busy) * float64(now.Sub(a.last))
	}
	a.last, a.busy = now, a.busy+d
	a.mu.Unlock()
}

// busyArea returns the busy worker-time integral up to now, in worker-nanoseconds.
func (a *accounts) busyArea(now time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last.IsZero() {
		return 0
	}
	return a.area + float64(a.busy)*float64(now.Sub(a.last))
}

// serverConfig is what a replica serves.
type serverConfig struct {
	workers  int
	service  sim.Distribution // wire time: already scaled
	seed     uint64
	reaches  bool   // the handler stops when its request is cancelled; else it finishes regardless
	protocol string // HTTP1, HTTP2 or GRPC
	maxQueue int
	// slack is the timer slack measured on this machine (Calibration.SleepP50Us): every sleep
	// is that much shorter than the drawn service time, so that a worker holds its slot for
	// the drawn time, as the simulator's does. Without it, a 0.55 ms slack on a 14 ms mean
	// service time loads the servers 4 % more than the model (75 % busy at 70 % load).
	slack time.Duration
	// scale multiplies every drawn service time (-server-scale); 0 means 1.
	scale float64
	// reports: the queue adds its load report (hedgehttp.LoadHeader) to every response, for
	// setups whose servers report (sim.Setup.ServerLoad).
	reports bool
	// stream: the server also sends out-of-band load reports (hedgehttp.Queue.LoadStream, or
	// over gRPC hedgegrpc.Queue.RegisterOOB), for setups with them (sim.Setup.LoadInterval).
	stream bool
}

// requestIDs reads a request's call index and attempt index.
func requestIDs(r *http.Request) (call, attempt int, ok bool) {
	call, err := strconv.Atoi(r.Header.Get(callHeader))
	if err != nil || call < 0 {
		return 0, 0, false
	}
	if v := r.Header.Get(hedgehttp.AttemptHeader); v != "" {
		attempt, err = strconv.Atoi(v)
		if err != nil || attempt < 0 || attempt >= maxAttempts {
			return 0, 0, false
		}
	}
	return call, attempt, true
}

// serviceTime draws the service time of attempt k of call i as the simulator does for the
// run with the same seed (sim.ServiceTime): the draw does not depend on the order in which
// requests reach the server, and the point's twin with its seed serves every request for the
// same time. Measured before the two shared their draws (64 closed-loop callers, 2 % of
// requests stalled 100 ms, 128,000 calls): the utilisation of the twin's seeds spread over
// about 10 % with how many slow requests each drew (the real server's own draw had 2.04 % of
// its measured calls slow, the seeds' median fewer), so the utilisation could be judged only
// against their whole range, which servers 10 % too slow passed as well.
func serviceTime(d sim.Distribution, seed uint64, call, attempt int) time.Duration {
	return sim.ServiceTime(d, seed, call, attempt)
}

// handler holds its worker for the request's service time. With reaches it returns early when
// the request is cancelled (the worker is freed at the cancellation); without, it always
// serves the whole time.
func handler(cfg serverConfig, acct *accounts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, attempt, ok := requestIDs(r)
		if !ok || call*maxAttempts+attempt >= len(acct.served) {
			http.Error(w, "hedgeload: bad call or attempt header", http.StatusBadRequest)
			return
		}
		hold(r.Context(), cfg, acct, call, attempt)
		w.WriteHeader(http.StatusOK)
	})
}

// hold is a worker's part of attempt of call: it counts the attempt as reached, and holds the
// worker for its drawn service time (less the slack), or until ctx is done: with reaches at
// the request's cancellation, and always when the replica stops.
func hold(ctx context.Context, cfg serverConfig, acct *accounts, call, attempt int) {
	if call >= acct.warm && call < acct.calls {
		// A worker started it: it reached the server. (In "ignored" mode every request
		// that joined the queue gets here, as the simulator counts it.)
		acct.reached.Add(1)
	}
	d := serviceTime(cfg.service, cfg.seed, call, attempt)
	if cfg.scale > 0 && cfg.scale != 1 {
		d = time.Duration(float64(d) * cfg.scale)
	}
	hold := max(d-cfg.slack, 0)
	start := time.Now()
	acct.startedAt[call*maxAttempts+attempt].Store(int64(start.Sub(acct.t0)))
	switch {
	case hold <= 0:
		// Nothing to hold: a timer of zero would still park the worker until the scheduler
		// ran it again, a fraction of a millisecond on a busy machine, and load the servers
		// with time the model does not draw (Sleep(0) returns at once).
	default:
		// With reaches, ctx ends with the request's cancellation; without, only with the
		// replica (see replicaLife).
		t := time.NewTimer(hold)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	acct.served[call*maxAttempts+attempt].Add(int64(time.Since(start)))
}

// startReplica starts one server on a fresh loopback port.
func startReplica(cfg serverConfig, acct *accounts) (*server, error) {
	if cfg.protocol == GRPC {
		return startGRPCReplica(cfg, acct)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := &server{ln: ln, addr: ln.Addr().String(), acct: acct, done: make(chan struct{})}
	q, err := hedgehttp.NewQueue(handler(cfg, acct), hedgehttp.QueueConfig{
		Workers:      cfg.workers,
		Queue:        cfg.maxQueue,
		NoLoadReport: !cfg.reports,
		Observer: func(e hedgehttp.QueueEvent) {
			switch e.Kind {
			case workqueue.Admitted:
				acct.busyDelta(time.Now(), 1)
			case workqueue.Finished:
				acct.busyDelta(time.Now(), -1)
			}
		},
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	rp.stats = func() workqueue.Stats { return workqueue.Stats(q.Stats()) }
	life := newReplicaLife()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !life.enter() {
			http.Error(w, "hedgeload: the replica is stopping", http.StatusServiceUnavailable)
			return
		}
		defer life.leave()
		if call, attempt, ok := requestIDs(r); ok {
			acct.arrive(call, attempt)
		}
		if !cfg.reaches {
			// The server finishes every request it received: the request's cancellation
			// must reach neither the queue (which would drop a queued request) nor the
			// handler. The replica's stop does.
			ctx, cancel := life.detach(r.Context())
			defer cancel()
			r = r.WithContext(ctx)
		}
		q.ServeHTTP(w, r)
	})
	var ls *hedgehttp.LoadStream
	if cfg.stream {
		// A report as often as the client asks: the setup's interval, scaled.
		if ls, err = q.LoadStream(time.Millisecond); err != nil {
			ln.Close()
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle(hedgehttp.LoadStreamPath, ls)
		mux.Handle("/", h)
		h = mux.ServeHTTP
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          discardLogger,
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1 << 16}
	rp.stop = func() {
		life.end() // what the queue holds and runs ends, in either mode
		if ls != nil {
			ls.Close() // the streams end before their connections do
		}
		srv.Close()
		life.wait()
	}
	go func() {
		defer close(rp.done)
		srv.Serve(ln)
	}()
	return rp, nil
}

// replicaLife is how long a replica runs, for its handlers. In "ignored" mode a request's own
// cancellation reaches neither the queue nor the handler, and a server's Close does not wait
// for its handlers: a replica stopped early (a collapse, a point stopped) would go on serving
// what it had queued on goroutines of its own, beside the next point's servers. So each
// request's context also ends when the replica stops (detach), and the stop waits for every
// handler that started.
type replicaLife struct {
	base    context.Context
	end     context.CancelFunc // ends base
	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
}

func newReplicaLife() *replicaLife {
	l := &replicaLife{}
	l.base, l.end = context.WithCancel(context.Background())
	return l
}

// enter counts a handler that starts, and reports false once the replica is stopping.
func (l *replicaLife) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.running.Add(1)
	return true
}

// leave counts a handler that entered and has returned.
func (l *replicaLife) leave() { l.running.Done() }

// detach returns ctx's values in a context that ends when the replica stops, not with ctx.
func (l *replicaLife) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(l.base, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// wait ends the replica's life (if end has not) and waits for every handler that entered.
func (l *replicaLife) wait() {
	l.end()
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.running.Wait()
}

// close stops the server at once (the point is over: every measured call has ended).
func (rp *server) close() {
	rp.stop()
	<-rp.done
}

// drain waits until the replica runs and queues nothing (losers the server finishes in
// "ignored" mode), or until the deadline.
func (rp *server) drain(deadline time.Time) error {
	for {
		s := rp.stats()
		if s.Running == 0 && s.Queued == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hedgeload: server %s still busy (%d running, %d queued) at the end of the point", rp.addr, s.Running, s.Queued)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// discardLogger drops net/http's server log lines: cancelled requests on a busy loopback
// server are expected and not worth a line each.
var discardLogger = log.New(io.Discard, "", 0)
