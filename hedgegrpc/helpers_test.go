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
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/test/bufconn"
)

// These tests run the interceptor against real gRPC servers: three backends on loopback TCP,
// or one over bufconn. None asserts on timing: a slow attempt blocks on a channel the test
// controls (or on its own cancellation), the hedge fires after a small fixed delay
// (hedge.After), and every wait is bounded.

const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

// checkLeaks fails the test if goroutines it started outlive it. Registered first, it runs
// after every other cleanup (servers stopped, connections closed).
func checkLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent() // goroutines of earlier tests are theirs to answer for
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// hedgeNow hedges every call after a millisecond, with no budget, so a test decides with its
// server which attempt is slow.
func hedgeNow() hedge.Config {
	return hedge.Config{
		Trigger: hedge.After(time.Millisecond),
		Budget:  budget.Config{Off: true},
	}
}

// attemptOf is the attempt index a request carries in its metadata (0 for the first).
func attemptOf(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(AttemptKey); len(v) > 0 {
		n, _ := strconv.Atoi(v[0])
		return n
	}
	return 0
}

// backend is a health service whose answers a test scripts.
type backend struct {
	healthpb.UnimplementedHealthServer
	name      string
	addr      string
	warm      atomic.Bool
	calls     atomic.Int32
	cancelled atomic.Int32 // handlers that returned because their context was done
	check     func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
	dialer    func(context.Context, string) (net.Conn, error) // bufconn only
	watch     func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error
	register  func(*grpc.Server) // more services beside the health service (startBufconnWith)
}

func (b *backend) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if req.Service == warmUpCall {
		b.warm.Store(true)
		return serving(), nil
	}
	b.calls.Add(1)
	resp, err := b.check(ctx, b, req)
	if ctx.Err() != nil {
		b.cancelled.Add(1)
	}
	return resp, err
}

func (b *backend) Watch(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	b.calls.Add(1)
	err := b.watch(b, req, s)
	if s.Context().Err() != nil {
		b.cancelled.Add(1)
	}
	return err
}

// serving is the answer of a healthy backend.
func serving() *healthpb.HealthCheckResponse {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
}

// startBackends starts n backends on loopback TCP, each a gRPC server with opts, stopped at
// the end of the test.
func startBackends(t *testing.T, n int, b func(i int) *backend, opts ...grpc.ServerOption) []*backend {
	t.Helper()
	var bs []*backend
	for i := range n {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		be := b(i)
		be.name = "backend" + strconv.Itoa(i)
		be.addr = lis.Addr().String()
		srv := grpc.NewServer(opts...)
		healthpb.RegisterHealthServer(srv, be)
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		bs = append(bs, be)
	}
	return bs
}

// dial connects to the backends through a manual resolver, with the interceptor's dial
// options (the hedging balancer among them). It waits until every backend is READY, so a
// test sees the balancer's choice among all of them.
func dial(t *testing.T, hi *Interceptor, bs []*backend) *grpc.ClientConn {
	t.Helper()
	cc, _, _ := dialResolver(t, hi, bs)
	return cc
}

// dialResolver is dial, and returns the manual resolver and the backends' endpoints too, for
// a test that changes what the resolver says. dialOpts come after the interceptor's (an
// interceptor among them runs once per attempt, inside the hedging one).
func dialResolver(t *testing.T, hi *Interceptor, bs []*backend, dialOpts ...grpc.DialOption) (*grpc.ClientConn, *manual.Resolver, []resolver.Endpoint) {
	t.Helper()
	var eps []resolver.Endpoint
	for _, b := range bs {
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: b.addr}}})
	}
	cc, r := dialEndpoints(t, hi, eps, dialOpts...)
	warmUp(t, cc, bs)
	return cc, r, eps
}

// dialEndpoints dials, through hi, a manual resolver's endpoints as given (an endpoint may
// have several addresses), with dialOpts after the interceptor's, closing the connection at
// the end of the test.
func dialEndpoints(t *testing.T, hi *Interceptor, eps []resolver.Endpoint, dialOpts ...grpc.DialOption) (*grpc.ClientConn, *manual.Resolver) {
	t.Helper()
	r := manual.NewBuilderWithScheme("hedgetest")
	r.InitialState(resolver.State{Endpoints: eps})
	opts := append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(r))
	opts = append(opts, dialOpts...)
	cc, err := grpc.NewClient(r.Scheme()+":///backends", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, r
}

// warmUp makes calls, sent once each, until every backend has answered one: the round-robin
// balancer reaches them all only once all are READY. The backends do not count these calls.
func warmUp(t *testing.T, cc *grpc.ClientConn, bs []*backend) {
	t.Helper()
	client := healthpb.NewHealthClient(cc)
	ctx := hedge.WithRepeatable(t.Context(), false)
	ok := waitFor(10*time.Second, func() bool {
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: warmUpCall}); err != nil {
			t.Fatalf("warm-up call: %v", err)
		}
		for _, b := range bs {
			if !b.warm.Load() {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatal("not every backend became READY")
	}
}

const warmUpCall = "warm-up"

// newInterceptor builds an interceptor or fails the test.
func newInterceptor(t *testing.T, cfg Config) *Interceptor {
	t.Helper()
	hi, err := NewInterceptor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hi
}

// waitFor polls cond with short pauses, at most for d, and reports whether it became true.
// It bounds every wait for something that crosses the network.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// arrivals tells a hedge when its call's primary has reached a backend, so that both attempts
// of a call are on the wire before one of them wins. Calls are told apart by the request's
// Service field.
type arrivals struct{ m sync.Map }

func (a *arrivals) of(call string) chan struct{} {
	ch, _ := a.m.LoadOrStore(call, make(chan struct{}))
	return ch.(chan struct{})
}

// startBufconn serves one backend over bufconn and returns a connection to it through the
// interceptor.
func startBufconn(t *testing.T, hi *Interceptor, be *backend, opts ...grpc.ServerOption) *grpc.ClientConn {
	return startBufconnWith(t, hi, be, nil, opts...)
}

// startBufconnWith is startBufconn with more client dial options.
func startBufconnWith(t *testing.T, hi *Interceptor, be *backend, dialOpts []grpc.DialOption, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	be.name, be.addr = "bufconn", "bufconn"
	healthpb.RegisterHealthServer(srv, be)
	if be.register != nil {
		be.register(srv)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	be.dialer = func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }
	dopts := append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(be.dialer))
	dopts = append(dopts, dialOpts...)
	cc, err := grpc.NewClient("passthrough:///bufconn", dopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestMain checks, after every test and example has run, that none left a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
