package hedgegrpc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// connCounter counts the client's connections to one address (a stats handler's TagConn).
type connCounter struct {
	addr string
	n    atomic.Int32
}

func (c *connCounter) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if info.RemoteAddr != nil && info.RemoteAddr.String() == c.addr {
		c.n.Add(1)
	}
	return ctx
}
func (*connCounter) HandleConn(context.Context, stats.ConnStats)                     {}
func (*connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (*connCounter) HandleRPC(context.Context, stats.RPCStats)                       {}

// A backend that fails is ejected; its server then restarts (its connection drops, and the
// backend leaves the balancer's READY set) and comes back on the same address, failing still.
// It comes back as it left, ejected: with a clean slate it took a third of the calls again
// (each one failed, then retried elsewhere) until five more failures ejected it anew, and a
// backend in a crash loop was never held out for longer.
func TestEjectionOutlastsAReconnect(t *testing.T) {
	checkLeaks(t)
	failing := func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return nil, status.Error(codes.Unavailable, "broken")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be0 := &backend{name: "backend0", addr: lis.Addr().String(), check: failing}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, be0)
	go srv.Serve(lis)
	bs := append([]*backend{be0}, startBackends(t, 2, func(int) *backend {
		return &backend{check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return serving(), nil
		}}
	})...)

	pc := hedge.Config{Attempts: 3, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: time.Microsecond}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	var eps []resolver.Endpoint
	for _, b := range bs {
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: b.addr}}})
	}
	r := manual.NewBuilderWithScheme("hedgetest")
	r.InitialState(resolver.State{Endpoints: eps})
	conns := &connCounter{addr: be0.addr}
	opts := append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(r), grpc.WithStatsHandler(conns))
	cc, err := grpc.NewClient(r.Scheme()+":///backends", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	warmUp(t, cc, bs)
	client := healthpb.NewHealthClient(cc)
	call := func() {
		t.Helper()
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("a call failed: %v (its retries should reach a healthy backend)", err)
		}
	}
	for range 40 {
		call()
	}
	if n := be0.calls.Load(); n != 5 {
		t.Fatalf("setup: the failing backend got %d calls, want 5 (ejected after 5 failures)", n)
	}

	// The restart: the server stops, and a new one listens on the same address.
	srv.Stop()
	lis, err = net.Listen("tcp", be0.addr)
	if err != nil {
		t.Fatal(err)
	}
	srv = grpc.NewServer()
	healthpb.RegisterHealthServer(srv, be0)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	if !waitFor(10*time.Second, func() bool { return conns.n.Load() >= 2 }) {
		t.Fatalf("the client never reconnected to the restarted backend (%d connections)", conns.n.Load())
	}
	// Back in the READY set within moments of connecting. Calls for up to two seconds (at
	// most 300): a backend back with a clean slate gets one within a few.
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		call()
		if n := be0.calls.Load(); n != 5 {
			t.Fatalf("after its restart the failing backend got %d more calls within %d: it came back with a clean slate, not ejected", n-5, i+1)
		}
	}
}
