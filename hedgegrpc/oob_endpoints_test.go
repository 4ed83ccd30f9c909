package hedgegrpc

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
)

// deadAddr is a loopback address nothing listens on (connection refused at once).
func deadAddr(t *testing.T) string {
	lis := listen(t)
	a := lis.Addr().String()
	lis.Close()
	return a
}

// TestOOBMultiAddressEndpoint: one endpoint whose first address refuses connections and
// whose second is a live backend with out-of-band reports. pick_first connects to the second,
// and the reports of the address it is connected to, not of the endpoint's first, reach the
// policy.
func TestOOBMultiAddressEndpoint(t *testing.T) {
	checkLeaks(t)
	bs, _ := startOOBBackends(t, []int{5}, func(int) *backend { return answerAtOnce() }, nil)
	var got atomic.Int32
	onOOB(t, func(addr string, l hedge.Load) {
		if addr == bs[0].addr {
			got.Add(1)
		}
	})
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	cc, _ := dialEndpoints(t, hi, []resolver.Endpoint{{Addresses: []resolver.Address{{Addr: deadAddr(t)}, {Addr: bs[0].addr}}}})
	client := healthpb.NewHealthClient(cc)
	p := (*hedge.Policy)(nil)
	ok := waitFor(3*time.Second, func() bool {
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		p = hi.Policy(checkMethod)
		_, w, ok := p.ServerQueue(time.Now())
		return ok && w == 5
	})
	if !ok {
		t.Fatalf("the client received %d out-of-band reports from %s, but the policy never saw one (ServerQueue ok=false)", got.Load(), bs[0].addr)
	}
}

// TestOOBEndpointReordered: one endpoint {A, B}, connected to A. The resolver sends the
// same endpoint as {B, A}; pick_first stays on A, and A's reports keep reaching the policy.
func TestOOBEndpointReordered(t *testing.T) {
	checkLeaks(t)
	bs, _ := startOOBBackends(t, []int{5, 7}, func(int) *backend { return answerAtOnce() }, nil)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	a, b := resolver.Address{Addr: bs[0].addr}, resolver.Address{Addr: bs[1].addr}
	cc, r := dialEndpoints(t, hi, []resolver.Endpoint{{Addresses: []resolver.Address{a, b}}})
	client := healthpb.NewHealthClient(cc)
	// seen reports whether the policy sees A's reports (5 workers), asking as of LoadMaxAge
	// after since at the earliest: a report received before since no longer counts then, one
	// received after it does.
	seen := func(since time.Time) bool {
		return waitFor(2*time.Second, func() bool {
			if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			_, w, ok := hi.Policy(checkMethod).ServerQueue(laterOf(time.Now(), since.Add(hedge.LoadMaxAge)))
			return ok && w == 5
		})
	}
	if !seen(time.Time{}) {
		t.Fatal("before the update: the policy never saw A's reports")
	}
	r.UpdateState(resolver.State{Endpoints: []resolver.Endpoint{{Addresses: []resolver.Address{b, a}}}})
	if updated := time.Now(); !seen(updated) {
		q, w, ok := hi.Policy(checkMethod).ServerQueue(laterOf(time.Now(), updated.Add(hedge.LoadMaxAge)))
		t.Fatalf("after the same endpoint came back as {B, A}: calls A=%d B=%d; policy ServerQueue=(%d,%d,%v)", bs[0].calls.Load(), bs[1].calls.Load(), q, w, ok)
	}
}

// laterOf returns the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// oobServer is a loopback backend behind a queue with out-of-band reports, counting the
// report streams open on it.
type oobServer struct {
	addr string
	open atomic.Int32
	be   *backend
	stop func()
}

func startOOBServer(t *testing.T, workers int) *oobServer {
	t.Helper()
	q, err := NewQueue(QueueConfig{Workers: workers, Queue: 8, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	lis := listen(t)
	s := &oobServer{addr: lis.Addr().String(), be: answerAtOnce()}
	s.be.addr = s.addr
	count := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if info.FullMethod == oobMethod {
			s.open.Add(1)
			defer s.open.Add(-1)
		}
		return h(srv, ss)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(q.UnaryServer), grpc.ChainStreamInterceptor(count, q.StreamServer))
	healthpb.RegisterHealthServer(srv, s.be)
	if err := q.RegisterOOB(srv, oobInterval); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	s.stop = srv.Stop
	t.Cleanup(srv.Stop)
	return s
}

func eps(ss ...*oobServer) []resolver.Endpoint {
	var out []resolver.Endpoint
	for _, s := range ss {
		out = append(out, resolver.Endpoint{Addresses: []resolver.Address{{Addr: s.addr}}})
	}
	return out
}

// TestOOBStreamsFollowResolver: replacing backends closes the removed ones' report streams
// and opens the new ones'; a backend that stops takes its stream with it, and closing the
// connection closes them all.
func TestOOBStreamsFollowResolver(t *testing.T) {
	checkLeaks(t)
	s := []*oobServer{startOOBServer(t, 1), startOOBServer(t, 2), startOOBServer(t, 3), startOOBServer(t, 4)}
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	cc, r := dialEndpoints(t, hi, eps(s[0], s[1]))
	client := healthpb.NewHealthClient(cc)
	call := func() { client.Check(t.Context(), &healthpb.HealthCheckRequest{}) } // a call racing a server's stop may fail
	open := func() [4]int32 {
		return [4]int32{s[0].open.Load(), s[1].open.Load(), s[2].open.Load(), s[3].open.Load()}
	}
	expect := func(want [4]int32, what string) {
		t.Helper()
		if !waitFor(3*time.Second, func() bool { call(); return open() == want }) {
			t.Fatalf("%s: open streams %v, want %v", what, open(), want)
		}
	}
	expect([4]int32{1, 1, 0, 0}, "initial")
	r.UpdateState(resolver.State{Endpoints: eps(s[3], s[1], s[2])})
	expect([4]int32{0, 1, 1, 1}, "after replacing 0 by 2 and 3")
	r.UpdateState(resolver.State{Endpoints: eps(s[2], s[0])})
	expect([4]int32{1, 0, 1, 0}, "after the second update")
	s[2].stop() // backend 2 goes away: its stream ends, its replica leaves
	expect([4]int32{1, 0, 0, 0}, "after backend 2 stopped")
	cc.Close()
	if !waitFor(3*time.Second, func() bool { return open() == [4]int32{} }) {
		t.Fatalf("after Close: open streams %v", open())
	}
}

// TestOOBNewSubConnOffSerializer: endpointsharding runs a child's ExitIdle on a goroutine of its
// own, where pick_first creates SubConns: ccWrapper.NewSubConn reads the reporting interval
// there while the serializer writes it on every resolver update. The race detector fails the
// test if that read is not synchronised (it caught it in about one run in five).
func TestOOBNewSubConnOffSerializer(t *testing.T) {
	checkLeaks(t)
	d := deadAddr(t)
	var servers []*oobServer
	var epsList []resolver.Endpoint
	for range 24 {
		s := startOOBServer(t, 2)
		servers = append(servers, s)
		epsList = append(epsList, resolver.Endpoint{Addresses: []resolver.Address{{Addr: d}, {Addr: s.addr}}})
	}
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	cc, r := dialEndpoints(t, hi, epsList)
	client := healthpb.NewHealthClient(cc)
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			r.UpdateState(resolver.State{Endpoints: epsList})
		}
	}()
	for _, s := range servers {
		s.stop() // its endpoint goes IDLE: ExitIdle on endpointsharding's goroutine, NewSubConn(d)
		time.Sleep(2 * time.Millisecond)
	}
	<-done
}

// TestEndpointsSharingAFirstAddress: a resolver lists two endpoints whose first address is
// the same backend. The balancer keeps one replica for the address (a pool refuses an address
// twice) and calls go on being answered, hedged ones too.
func TestEndpointsSharingAFirstAddress(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 2, func(int) *backend { return answerAtOnce() })
	a, b := resolver.Address{Addr: bs[0].addr}, resolver.Address{Addr: bs[1].addr}
	hi := newInterceptor(t, Config{Policy: hedgeNow()})
	cc, _ := dialEndpoints(t, hi, []resolver.Endpoint{{Addresses: []resolver.Address{a}}, {Addresses: []resolver.Address{a, b}}})
	client := healthpb.NewHealthClient(cc)
	for i := range 20 {
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("call %d, with two endpoints sharing first address %s: %v", i, a.Addr, err)
		}
	}
	if n := bs[0].calls.Load(); n == 0 {
		t.Fatalf("the shared first address %s got none of 20 calls", a.Addr)
	}
}
