package hedgegrpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
)

// TestLoadReportOfOldPickGoesToItsBackend: the policy's load board is numbered by a backend's
// place in the picker's ready list, and that place changes when another backend becomes
// READY. A call picked before the change ends after it; its ORCA report must be filed under
// its own backend's current number, not the one it had when picked, which now belongs to
// another backend.
//
// Two real servers send scripted ORCA reports: idle (0 queued of 4 workers) and busy (7
// queued, 4 of 4 workers busy); idle's address sorts first, so once both are READY idle is
// number 0 and busy number 1. A call is held on busy while busy is the only backend (number
// 0); idle then joins and reports. When the held call ends, its report must not overwrite
// idle's: the shortest queue the policy reads is still idle's empty one. Filed under its old
// number, it replaces idle's report and the policy reads every backend as backlogged (7 of 4),
// refusing hedges that the idle backend could start at once.
func TestLoadReportOfOldPickGoesToItsBackend(t *testing.T) {
	checkLeaks(t)
	lisA, lisB := listen(t), listen(t)
	if lisB.Addr().String() < lisA.Addr().String() {
		lisA, lisB = lisB, lisA
	}
	held, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	idle := serveReporting(t, lisA, workqueue.Load{Workers: 4}, nil, nil)
	busy := serveReporting(t, lisB, workqueue.Load{Queued: 7, Busy: 4, Workers: 4}, held, release)

	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}})
	cc, r := dialEndpoints(t, hi, []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: busy.addr}}}})
	warmUp(t, cc, []*backend{busy.backend})
	client := healthpb.NewHealthClient(cc)
	p := hi.Policy(checkMethod)

	// Held on busy while it is replica 0; sent once, so that it is never hedged to idle.
	done := make(chan error, 1)
	go func() {
		ctx := hedge.WithRepeatable(t.Context(), false)
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "hold"})
		done <- err
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the held call never reached the busy backend")
	}

	r.UpdateState(resolver.State{Endpoints: []resolver.Endpoint{
		{Addresses: []resolver.Address{{Addr: busy.addr}}},
		{Addresses: []resolver.Address{{Addr: idle.addr}}},
	}})
	warmUp(t, cc, []*backend{idle.backend}) // idle is READY, in the picker, and has reported
	if q, w, ok := p.ServerQueue(time.Now()); !ok || q != 0 || w != 4 {
		t.Fatalf("before the held call ends: ServerQueue = (%d, %d, %v), want idle's (0, 4)", q, w, ok)
	}
	release <- struct{}{}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held call never ended")
	}
	// Read the board as of just after idle's report, so that a stall of the machine cannot
	// age it: idle's slot holds idle's report then, fresh, unless busy's replaced it (fresh
	// too when it came within LoadMaxAge, and refused as from the future when later).
	at := idle.lastAnswer().Add(time.Millisecond)
	if q, w, ok := p.ServerQueue(at); !ok || q != 0 || w != 4 {
		t.Fatalf("after busy's held call ended: ServerQueue = (%d, %d, %v), want idle's (0, 4): busy's report was filed under idle's number", q, w, ok)
	}
}

// reportingServer is a backend whose every call carries a fixed ORCA per-call report.
type reportingServer struct {
	*backend
	last chan time.Time // when it last answered (a one-slot mailbox)
}

func (s *reportingServer) lastAnswer() time.Time {
	at := <-s.last
	s.last <- at
	return at
}

// serveReporting serves on lis a health backend whose calls each carry l as their ORCA
// report. A call for the "hold" service signals held and waits for release.
func serveReporting(t *testing.T, lis net.Listener, l workqueue.Load, held chan<- struct{}, release <-chan struct{}) *reportingServer {
	t.Helper()
	s := &reportingServer{last: make(chan time.Time, 1)}
	s.last <- time.Time{}
	s.backend = &backend{check: func(ctx context.Context, _ *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if req.Service == "hold" {
			held <- struct{}{}
			<-release
		}
		return serving(), nil
	}}
	s.name, s.addr = lis.Addr().String(), lis.Addr().String()
	report := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		_ = grpc.SetTrailer(ctx, encodeTrailer(l))
		<-s.last
		s.last <- time.Now()
		return resp, err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(report))
	healthpb.RegisterHealthServer(srv, s.backend)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return s
}
