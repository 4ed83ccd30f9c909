package hedgegrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// blockUntil is a backend whose handler waits for release (or its context), counting calls.
func blockUntil(release chan struct{}) *backend {
	return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		select {
		case <-release:
			return serving(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second): // a bound, never reached when the test passes
			return nil, status.Error(codes.Internal, "never released")
		}
	}}
}

func TestQueue(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, Queue: 1, Pushback: 1500 * time.Millisecond, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	be := blockUntil(release)
	hi := newInterceptor(t, Config{}) // no hedging: the test drives each call
	cc := startBufconn(t, hi, be, grpc.ChainUnaryInterceptor(q.UnaryServer))
	client := healthpb.NewHealthClient(cc)
	results := make(chan error, 2)
	call := func(ctx context.Context) {
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		results <- err
	}

	// The first call runs, the second waits, and a third finds the queue full.
	go call(t.Context())
	if !waitFor(10*time.Second, func() bool { return q.Stats().Running == 1 }) {
		t.Fatal("the first call never ran")
	}
	waiting, cancel := context.WithCancel(t.Context())
	go call(waiting)
	if !waitFor(10*time.Second, func() bool { return q.Stats().Queued == 1 }) {
		t.Fatal("the second call never queued")
	}
	var trailer metadata.MD
	_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("queue full: err = %v, want RESOURCE_EXHAUSTED", err)
	}
	if got := trailer.Get(PushbackKey); len(got) != 1 || got[0] != "1500" {
		t.Fatalf("queue full: pushback trailer %v, want 1500", got)
	}

	// The waiting call is cancelled: it leaves the queue without running.
	cancel()
	if err := <-results; status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled waiter: err = %v, want CANCELED", err)
	}
	if !waitFor(10*time.Second, func() bool { return q.Stats().Abandoned == 1 }) {
		t.Fatalf("stats %+v, want one abandoned call", q.Stats())
	}
	close(release)
	if err := <-results; err != nil {
		t.Fatalf("running call: %v", err)
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
	s := q.Stats()
	if s.Admitted != 1 || s.Rejected != 1 || s.Abandoned != 1 || s.Running != 0 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}

	// With the slot free, calls run again; a waiter granted a slot runs in FIFO order.
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestQueueHandsSlotToWaiter(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	be := blockUntil(release)
	startBufconn(t, newInterceptor(t, Config{}), be, grpc.ChainUnaryInterceptor(q.UnaryServer))
	// A plain connection: it sends the copies' marks as the test writes them (an Interceptor
	// sets its own and drops a caller's).
	cc := plainBufconn(t, be)
	client := healthpb.NewHealthClient(cc)
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{})
			results <- err
		}()
	}
	if !waitFor(10*time.Second, func() bool { s := q.Stats(); return s.Running == 1 && s.Queued == 1 }) {
		t.Fatalf("stats %+v, want one running and one queued", q.Stats())
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if s := q.Stats(); s.Admitted != 2 || s.Running != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestQueueConfigErrors(t *testing.T) {
	for _, cfg := range []QueueConfig{{Workers: -1}, {Pushback: -time.Second}} {
		if _, err := NewQueue(cfg); !errors.Is(err, ErrQueueConfig) {
			t.Errorf("NewQueue(%+v) = %v, want an error wrapping ErrQueueConfig", cfg, err)
		}
	}
}

// The pushback trailer counts whole milliseconds, rounded up: a pushback under one is not a
// "retry at once".
func TestQueuePushbackRoundsUp(t *testing.T) {
	for _, c := range []struct {
		pushback time.Duration
		want     string
	}{{300 * time.Microsecond, "1"}, {time.Millisecond, "1"}, {1500*time.Millisecond + 1, "1501"}, {0, "1000"}} {
		q, err := NewQueue(QueueConfig{Pushback: c.pushback, QueueHealthCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.trailer.Get(PushbackKey); len(got) != 1 || got[0] != c.want {
			t.Errorf("Pushback %v: trailer %v, want %s", c.pushback, got, c.want)
		}
	}
}

// The server sends the start signal when the handler starts, and the client's stats handler
// reports it with the attempt's context while the handler is still running.
func TestStartSignal(t *testing.T) {
	checkLeaks(t)
	started := make(chan int, 4)
	release := make(chan struct{})
	var once sync.Once
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		select {
		case <-release: // only once the client has seen the signal
			return serving(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second): // a bound, never reached when the test passes
			return nil, status.Error(codes.Internal, "no start signal reached the client")
		}
	}}
	q, err := NewQueue(QueueConfig{Workers: 1, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	hi := newInterceptor(t, Config{Idempotent: []string{checkMethod}})
	cc := startBufconn(t, hi, be, grpc.ChainUnaryInterceptor(q.UnaryServer, StartSignal))
	// The same connection, with a stats handler that records the signal.
	sig := startSignal{report: func(ctx context.Context) {
		if info, ok := hedge.AttemptFrom(ctx); ok {
			started <- info.Index
		} else {
			started <- -1
		}
		once.Do(func() { close(release) })
	}}
	cc2, err := grpc.NewClient(cc.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(be.dialer), grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithStatsHandler(sig))
	if err != nil {
		t.Fatal(err)
	}
	defer cc2.Close()
	// The caller asks for the signal itself (a policy whose trigger reads signals asks on
	// every attempt).
	ask := metadata.AppendToOutgoingContext(t.Context(), StartSignalKey, "1")
	if _, err := healthpb.NewHealthClient(cc2).Check(ask, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if k := <-started; k != 0 {
		t.Fatalf("start signal reported for attempt %d, want attempt 0 through its context", k)
	}
	// A call that does not ask gets no signal, only its answer's headers.
	if _, err := healthpb.NewHealthClient(cc2).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-started:
		t.Fatalf("a start signal reached attempt %d, which did not ask", k)
	default:
	}
}

// End to end: with the Tied trigger both copies are sent at once to a server with one worker;
// the worker's start signal reaches the client, whose core cancels the copy still queued,
// and the Queue lets it go without running.
func TestStartSignalCancelsQueuedCopy(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		// Answer once the other copy has left the queue.
		if !waitFor(10*time.Second, func() bool { return q.Stats().Abandoned == 1 }) {
			return nil, status.Error(codes.Internal, "the queued copy was not cancelled")
		}
		return serving(), nil
	}}
	pc := hedgeNow()
	pc.Trigger = hedge.Tied()
	var sent, discarded atomic.Int32
	pc.Observer = func(e hedge.Event) {
		switch e.Kind {
		case hedge.AttemptStarted:
			sent.Add(1)
		case hedge.AttemptDiscarded:
			discarded.Add(1)
		}
	}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	// The worker's copy signals its start only once the other copy waits in the queue.
	bothArrived := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !waitFor(10*time.Second, func() bool { return q.Stats().Queued == 1 }) {
			return nil, status.Error(codes.Internal, "the second copy never queued")
		}
		return handler(ctx, req)
	}
	cc := startBufconn(t, hi, be, grpc.ChainUnaryInterceptor(q.UnaryServer, bothArrived, StartSignal))
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
	if sent.Load() != 2 || discarded.Load() != 1 {
		t.Fatalf("%d copies sent, %d discarded; want 2 and 1", sent.Load(), discarded.Load())
	}
	if s := q.Stats(); s.Admitted != 1 || s.Abandoned != 1 {
		t.Fatalf("queue stats %+v, want one run and one abandoned", s)
	}
}

// With HedgedLast, copies wait behind first attempts, and a first attempt that finds the
// queue full pushes out the newest copy.
func TestQueueHedgedLast(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, Queue: 2, HedgedLast: true, Pushback: 2 * time.Second, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		mu.Lock()
		order = append(order, req.Service)
		mu.Unlock()
		if req.Service == "running" {
			<-release
		}
		return serving(), nil
	}}
	startBufconn(t, newInterceptor(t, Config{}), be, grpc.ChainUnaryInterceptor(q.UnaryServer))
	// A plain connection: it sends the copies' marks as the test writes them (an Interceptor
	// sets its own and drops a caller's).
	cc := plainBufconn(t, be)
	client := healthpb.NewHealthClient(cc)
	type result struct {
		name    string
		err     error
		trailer metadata.MD
	}
	results := make(chan result, 4)
	send := func(name string, copy bool) {
		ctx := t.Context()
		if copy {
			ctx = metadata.AppendToOutgoingContext(ctx, AttemptKey, "1")
		}
		var tr metadata.MD
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: name}, grpc.Trailer(&tr))
		results <- result{name, err, tr}
	}
	go send("running", false)
	if !waitFor(10*time.Second, func() bool { return q.Stats().Running == 1 }) {
		t.Fatal("the first call never ran")
	}
	go send("copy-1", true)
	if !waitFor(10*time.Second, func() bool { return q.Stats().QueuedHedged == 1 }) {
		t.Fatalf("stats %+v, want a copy queued", q.Stats())
	}
	go send("copy-2", true)
	if !waitFor(10*time.Second, func() bool { return q.Stats().QueuedHedged == 2 }) {
		t.Fatalf("stats %+v, want two copies queued", q.Stats())
	}
	go send("first", false) // the queue is full: the newest copy makes room
	r := <-results
	if r.name != "copy-2" || status.Code(r.err) != codes.ResourceExhausted || len(r.trailer.Get(PushbackKey)) != 1 || r.trailer.Get(PushbackKey)[0] != "2000" {
		t.Fatalf("%s: %v, trailer %v; want copy-2 evicted with RESOURCE_EXHAUSTED and a 2000ms pushback", r.name, r.err, r.trailer)
	}
	if !waitFor(10*time.Second, func() bool { s := q.Stats(); return s.Queued == 2 && s.QueuedHedged == 1 }) {
		t.Fatalf("stats %+v, want the first attempt and one copy queued", q.Stats())
	}
	close(release)
	for range 3 {
		if r := <-results; r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 3 || order[1] != "first" || order[2] != "copy-1" {
		t.Fatalf("handlers ran in the order %v, want [running first copy-1]", order)
	}
	if s := q.Stats(); s.Evicted != 1 || s.Admitted != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// plainBufconn dials be's bufconn server without an Interceptor: the test's calls reach the
// server as written (an Interceptor sets its own marks and drops a caller's), and what the
// server sends back (a trailer) reaches the test as written. It is closed at the test's end.
func plainBufconn(t *testing.T, be *backend) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(be.dialer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}
