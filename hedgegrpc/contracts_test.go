package hedgegrpc

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// These tests hold the interceptor to what a plain grpc-go connection promises its caller:
// hedging changes how many copies reach the servers, never what the caller sees of its call.

// A server stream that fails before its first message gives the caller the server's trailer
// from ClientStream.Trailer, as a plain stream does.
func TestStreamFailureBeforeFirstMessageKeepsTrailer(t *testing.T) {
	checkLeaks(t)
	be := &backend{watch: func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		s.SetTrailer(metadata.Pairs("why", "no such service"))
		return status.Error(codes.NotFound, "unknown service")
	}}
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{watchMethod}})
	client := healthpb.NewHealthClient(startBufconn(t, hi, be))
	s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.NotFound {
		t.Fatalf("Recv: %v, want NOT_FOUND", err)
	}
	if why := s.Trailer().Get("why"); len(why) != 1 || why[0] != "no such service" {
		t.Fatalf("Trailer() = %v, want the server's", s.Trailer())
	}
}

// grpc.OnFinish runs once per RPC, with the call's result, however many attempts it took:
// for a unary call and for a server stream, each hedged, whose copy wins.
func TestOnFinishOncePerCall(t *testing.T) {
	checkLeaks(t)
	var arrived arrivals
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{
			check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
				if attemptOf(ctx) == 0 {
					<-ctx.Done() // the primary is slow: the hedge wins
					return nil, ctx.Err()
				}
				return serving(), nil
			},
			watch: func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
				if attemptOf(s.Context()) == 0 {
					close(arrived.of(req.Service))
					<-s.Context().Done()
					return s.Context().Err()
				}
				select { // the hedge answers once its primary is in: a win before would cancel it unseen
				case <-arrived.of(req.Service):
				case <-s.Context().Done():
					return s.Context().Err()
				case <-time.After(5 * time.Second):
				}
				return s.Send(serving())
			},
		}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod, watchMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))

	var mu sync.Mutex
	var finished []error
	onFinish := grpc.OnFinish(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		finished = append(finished, err)
	})
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "unary"}, onFinish); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]error(nil), finished...)
	mu.Unlock()
	if len(got) != 1 || got[0] != nil {
		t.Fatalf("unary: OnFinish ran with %v, want once with nil", got)
	}
	if n := hi.Policy(checkMethod).Measured().HedgesStarted; n != 1 {
		t.Fatalf("unary: %d hedges, want the call hedged", n)
	}

	mu.Lock()
	finished = nil
	mu.Unlock()
	ctx, cancel := context.WithCancel(t.Context())
	s, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "stream"}, onFinish)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived.of("stream"): // the primary was sent: the hedge won a race
	case <-time.After(5 * time.Second):
		t.Fatal("the primary never arrived")
	}
	cancel() // the caller is done with the stream: it ends, once
	if !waitFor(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(finished) > 0 }) {
		t.Fatal("stream: OnFinish never ran")
	}
	// Every attempt has ended once the servers saw both cancelled; then no late call may come.
	waitFor(5*time.Second, func() bool { return bs[0].cancelled.Load()+bs[1].cancelled.Load() >= 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(finished) != 1 || status.Code(finished[0]) != codes.Canceled {
		t.Fatalf("stream: OnFinish ran with %v, want once, CANCELED", finished)
	}
}

// A first attempt drops the attempt mark its caller's outgoing metadata carries (a proxy
// forwarding its own incoming metadata), and a copy carries its own mark alone.
func TestInheritedAttemptMarkDropped(t *testing.T) {
	checkLeaks(t)
	var mu sync.Mutex
	seen := map[int][]string{}
	var arrived arrivals
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		marks := md.Get(AttemptKey)
		mu.Lock()
		seen[len(seen)] = marks
		mu.Unlock()
		if len(marks) == 0 {
			close(arrived.of("first"))
			<-ctx.Done()
			return nil, ctx.Err()
		}
		select {
		case <-arrived.of("first"):
			return serving(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(startBufconn(t, hi, be))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, AttemptKey, "1", "tenant", "a")
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var first, copies int
	for _, marks := range seen {
		switch {
		case len(marks) == 0:
			first++
		case len(marks) == 1 && marks[0] == "1":
			copies++
		default:
			t.Errorf("an attempt carried %v", marks)
		}
	}
	if first != 1 || copies != 1 {
		t.Fatalf("attempts %v: want one first attempt unmarked and one copy marked 1", seen)
	}
	if v := metadata.ValueFromOutgoingContext(ctx, AttemptKey); len(v) != 1 || v[0] != "1" {
		t.Fatalf("the caller's metadata changed: %v", v)
	}
}

// RESOURCE_EXHAUSTED with a pushback holds the call's retry back for the pushback, whichever
// backend the retry goes to (gRFC A6); the policy's own backoff is much shorter.
func TestPushbackDelaysRetry(t *testing.T) {
	checkLeaks(t)
	const pushback = 300 * time.Millisecond
	var mu sync.Mutex
	var answered, retried time.Time
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			if answered.IsZero() {
				grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, "300"))
				answered = time.Now()
				return nil, status.Error(codes.ResourceExhausted, "busy")
			}
			retried = time.Now()
			return serving(), nil
		}}
	})
	pc := hedge.Config{Attempts: 2, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: time.Millisecond, Jitter: -1}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if retried.IsZero() {
		t.Fatal("no retry")
	}
	if gap := retried.Sub(answered); gap < pushback {
		t.Fatalf("retried %v after the pushback answer, want at least %v", gap, pushback)
	}
}

// First attempts go by power of two choices: with two backends, both are the candidates of
// every pick, and while one holds a call of this client, every other call goes to the other.
// Taking turns (gRPC's round_robin) would send half of them to the busy backend.
func TestFirstAttemptsAvoidBusyBackend(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	held := make(chan string, 1)
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if req.Service == "hold" {
				held <- b.name
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return serving(), nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	once := hedge.WithRepeatable(ctx, false) // sent once: no hedge takes the other backend
	done := make(chan error, 1)
	go func() {
		_, err := client.Check(once, &healthpb.HealthCheckRequest{Service: "hold"})
		done <- err
	}()
	var busy string
	select {
	case busy = <-held:
	case <-ctx.Done():
		t.Fatal("the held call never reached a backend")
	}
	const calls = 20
	for k := range calls {
		if _, err := client.Check(once, &healthpb.HealthCheckRequest{Service: "call" + strconv.Itoa(k)}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("held call: %v", err)
	}
	for _, b := range bs {
		want := int32(calls)
		if b.name == busy {
			want = 1 // the held call alone
		}
		if got := b.calls.Load(); got != want {
			t.Errorf("%s (busy: %v) answered %d calls, want %d", b.name, b.name == busy, got, want)
		}
	}
}

// An attempt that reached no server (nothing listens at the backend's address) is gRPC's
// "never sent": like HTTP's connection refused it is hedge.MarkUnsent's case, so the core
// resends it at once, even for a method that is not safe to repeat, as often as Attempts (so
// the call makes 1 + Attempts attempts, all unsent).
func TestNeverSentIsUnsent(t *testing.T) {
	checkLeaks(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // connections are refused
	var unsent, started atomic.Int32
	pc := hedge.Config{
		Attempts: 3,
		Budget:   budget.Config{Off: true},
		Classify: func(err error) hedge.Outcome {
			o := Classify(err)
			if o.Unsent {
				unsent.Add(1)
			}
			return o
		},
	}
	hi := newInterceptor(t, Config{Policy: pc, Observer: func(_ string, e hedge.Event) {
		if e.Kind == hedge.AttemptStarted {
			started.Add(1)
		}
	}})
	opts := append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err %v, want UNAVAILABLE", err)
	}
	if u, s := unsent.Load(), started.Load(); u != 4 || s != 4 {
		t.Fatalf("%d attempts classified unsent of %d started; want every one of 1+3 (a method not safe to repeat is resent when it never left)", u, s)
	}
}
