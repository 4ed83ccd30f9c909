package hedgegrpc

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// Two groups of two backends, local and remote (5ms farther): first attempts all go local;
// hedges go local while a healthy unused local backend exists, remote otherwise.
//
// The balancer decides at each attempt's pick, from the backends the call's earlier picks
// took; the state machine numbers attempts as it starts them, and each picks on its own
// goroutine (the first on the caller's), which a busy machine may run late. An attempt that
// picks after a later-numbered one took the other local backend rightly goes remote. So each
// attempt is sent only once the one before it has reached its backend (inOrder): the
// attempt numbers the test asserts on are then the order of the picks.
func TestReplicaGroups(t *testing.T) {
	checkLeaks(t)
	var stuck atomic.Bool // local backends hang until their attempt loses
	var mu sync.Mutex
	seen := map[string]map[int]string{} // call -> attempt -> backend
	var arrived arrivals                // "call/attempt": closed once the attempt reached a backend
	check := func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		k := attemptOf(ctx)
		mu.Lock()
		if seen[req.Service] == nil {
			seen[req.Service] = map[int]string{}
		}
		if _, again := seen[req.Service][k]; !again {
			close(arrived.of(req.Service + "/" + strconv.Itoa(k)))
		}
		seen[req.Service][k] = b.name
		mu.Unlock()
		wait := time.Duration(0)
		switch {
		case b.name >= "backend2":
			wait = 5 * time.Millisecond
		case stuck.Load():
			wait = 10 * time.Second // bounded: the calls end long before
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return serving(), nil
	}
	bs := startBackends(t, 4, func(int) *backend { return &backend{check: check} })
	hi := newInterceptor(t, Config{
		Policy:     hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 3, MaximumConcurrent: 3, Budget: budget.Config{Off: true}},
		Idempotent: []string{checkMethod},
	})
	// inOrder, inside the hedging interceptor (once per attempt), holds attempt k until attempt
	// k-1 of its call has reached a backend, and so has been picked.
	inOrder := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if info, ok := hedge.AttemptFrom(ctx); ok && info.Index > 0 {
			id := req.(*healthpb.HealthCheckRequest).Service
			select {
			case <-arrived.of(id + "/" + strconv.Itoa(info.Index-1)):
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	// Connect without groups, so that every backend is READY (and warmed up), then place
	// backends 0 and 1 in the local group and 2 and 3 in the remote one.
	cc, r, flat := dialResolver(t, hi, bs, grpc.WithChainUnaryInterceptor(inOrder))
	var grouped []resolver.Endpoint
	for i, ep := range flat {
		grouped = append(grouped, InGroup(ep, i/2, 1))
	}
	r.UpdateState(resolver.State{Endpoints: grouped}) // returns once the balancer has the groups
	client := healthpb.NewHealthClient(cc)

	calls := 0
	// call makes a call (with ctx's trigger) and returns the backend of each of its first n
	// attempts.
	call := func(ctx context.Context, n int) map[int]string {
		t.Helper()
		calls++
		id := strconv.Itoa(calls)
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: id}); err != nil {
			t.Fatal(err)
		}
		var out map[int]string
		waitFor(5*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			out = maps.Clone(seen[id])
			return len(out) >= n
		})
		return out
	}
	isLocal := func(name string) bool { return name == bs[0].name || name == bs[1].name }

	// Local backends answer at once: every first attempt stays local, on both of them (not
	// hedged: a slow machine would hedge some after 1ms).
	first := map[string]int{}
	for range 20 {
		s := call(hedge.WithTrigger(t.Context(), hedge.Trigger{}), 1)
		if len(s) != 1 || !isLocal(s[0]) {
			t.Fatalf("fast local: attempts %v, want one local attempt", s)
		}
		first[s[0]]++
	}
	if len(first) != 2 {
		t.Errorf("first attempts %v, want both local backends", first)
	}

	// Local backends hang: the first hedge goes to the other local backend, the second to a
	// remote one, which answers.
	stuck.Store(true)
	for range 5 {
		s := call(t.Context(), 3)
		if !isLocal(s[0]) || !isLocal(s[1]) || s[0] == s[1] || isLocal(s[2]) {
			t.Errorf("hung local: attempts %v; want local, the other local, then remote", s)
		}
	}
	if n := bs[2].calls.Load() + bs[3].calls.Load(); n != 5 {
		t.Errorf("the remote backends had %d attempts, want only the 5 second hedges", n)
	}
}

func TestInGroupPanics(t *testing.T) {
	for _, w := range []float64{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("InGroup weight %v did not panic", w)
				}
			}()
			InGroup(resolver.Endpoint{}, 0, w)
		}()
	}
}

// An ejected backend stays ejected when the resolver places the backends in groups, and
// again when it takes the groups away: outlier detection's verdict belongs to the backend,
// not to the layout. Backend 0 fails every call (UNAVAILABLE) until it is ejected; then
// neither change of layout sends it a call.
func TestEjectionOutlivesGroupChange(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 2, func(i int) *backend {
		return &backend{check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if i == 0 {
				return nil, status.Error(codes.Unavailable, "backend0 is down")
			}
			return serving(), nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedge.Config{}, Idempotent: []string{checkMethod}})
	cc, r, flat := dialResolver(t, hi, bs)
	var grouped []resolver.Endpoint
	for _, ep := range flat {
		grouped = append(grouped, InGroup(ep, 0, 1))
	}
	client := healthpb.NewHealthClient(cc)
	once := hedge.WithRepeatable(t.Context(), false) // each call sent once: its failure is the caller's
	// calls makes n calls and returns how many reached backend 0.
	calls := func(n int) int32 {
		before := bs[0].calls.Load()
		for range n {
			client.Check(once, &healthpb.HealthCheckRequest{Service: "call"}) // backend 0's fail
		}
		return bs[0].calls.Load() - before
	}
	for k := 0; bs[0].calls.Load() < replica.DefaultConsecutiveFailures; k++ {
		if k == 1000 {
			t.Fatalf("backend 0 had %d calls in 1000", bs[0].calls.Load())
		}
		calls(1)
	}
	if n := calls(20); n != 0 {
		t.Fatalf("backend 0 failed %d calls in a row and then had %d of 20 more: not ejected", replica.DefaultConsecutiveFailures, n)
	}
	r.UpdateState(resolver.State{Endpoints: grouped}) // returns once the balancer has the groups
	if n := calls(20); n != 0 {
		t.Errorf("in groups, the ejected backend had %d of 20 calls", n)
	}
	r.UpdateState(resolver.State{Endpoints: flat})
	if n := calls(20); n != 0 {
		t.Errorf("out of groups again, the ejected backend had %d of 20 calls", n)
	}
}
