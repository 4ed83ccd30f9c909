package hedgegrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// slowBackend0 makes backend 0 slow (it answers only when its call is cancelled) and the
// others fast.
func slowBackend0(i int) *backend {
	return &backend{check: func(ctx context.Context, b *backend, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if i == 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second): // a bound, never reached when the test passes
				return nil, status.Error(codes.Internal, "slow backend was not cancelled")
			}
		}
		return serving(), nil
	}}
}

// The first attempt receives into the caller's reply; when both attempts answer, the
// caller's reply holds the winner's and nothing of the other's, whichever won: the reply's
// status names the attempt that sent it, and the peer the backend that answered.
func TestReplyIsTheWinnersWhenBothAnswer(t *testing.T) {
	checkLeaks(t)
	var hedgeArrived sync.Map // call -> chan struct{}, closed when the hedge reached a server
	var primaryAt sync.Map    // call -> the address of the backend its first attempt reached
	arrival := func(call string) chan struct{} {
		ch, _ := hedgeArrived.LoadOrStore(call, make(chan struct{}))
		return ch.(chan struct{})
	}
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if attemptOf(ctx) == 0 {
				primaryAt.Store(req.Service, b.addr)
				// Answer once the hedge has reached its server: both answers race back.
				select {
				case <-arrival(req.Service):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
			}
			close(arrival(req.Service))
			return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
	cc := dial(t, hi, bs)
	servedBy := map[healthpb.HealthCheckResponse_ServingStatus]int{}
	for i := range 40 {
		var p peer.Peer
		reply := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}
		if err := cc.Invoke(t.Context(), checkMethod, &healthpb.HealthCheckRequest{Service: fmt.Sprint(i)}, reply, grpc.Peer(&p)); err != nil {
			t.Fatal(err)
		}
		if reply.Status != healthpb.HealthCheckResponse_SERVING && reply.Status != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Fatalf("call %d: reply %v, want one attempt's", i, reply)
		}
		servedBy[reply.Status]++
		// The primary and the hedge go to different backends: the peer tells which answered,
		// and must be the one whose reply the caller holds.
		at, _ := primaryAt.Load(fmt.Sprint(i))
		if p.Addr == nil || (p.Addr.String() == at) != (reply.Status == healthpb.HealthCheckResponse_SERVING) {
			t.Fatalf("call %d: reply %v from %v, the first attempt at %v: not the answering attempt's reply", i, reply.Status, p.Addr, at)
		}
	}
	if servedBy[healthpb.HealthCheckResponse_NOT_SERVING] == 0 {
		t.Fatalf("replies %v: the hedge never won, so nothing was checked", servedBy)
	}
}

func TestHedgeBeatsSlowBackend(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 3, slowBackend0)
	var won atomic.Int32
	hi := newInterceptor(t, Config{
		Policy:     hedgeNow(),
		Idempotent: []string{"/grpc.health.v1.Health/"},
		Observer: func(method string, e hedge.Event) {
			if e.Kind == hedge.HedgeWon && method == checkMethod {
				won.Add(1)
			}
		},
	})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	const calls = 30
	for i := range calls {
		var p peer.Peer
		resp, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: fmt.Sprint(i)}, grpc.Peer(&p))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("call %d: status %v", i, resp.GetStatus())
		}
		if p.Addr == nil || p.Addr.String() == bs[0].addr {
			t.Fatalf("call %d: answered by %v, want a fast backend", i, p.Addr)
		}
	}
	// Every call whose primary went to the slow backend was won by a hedge, and the slow
	// backend's handler saw the loser cancelled.
	if bs[0].calls.Load() == 0 {
		t.Fatal("no call reached the slow backend: the balancer does not round-robin")
	}
	if !waitFor(5*time.Second, func() bool { return bs[0].cancelled.Load() == bs[0].calls.Load() }) {
		t.Fatalf("slow backend: %d calls, %d saw their context cancelled", bs[0].calls.Load(), bs[0].cancelled.Load())
	}
	if m := hi.Measured()[checkMethod]; won.Load() == 0 || int64(won.Load()) != m.HedgesWon {
		t.Fatalf("the observer saw %d hedges win for %s, the policy %d", won.Load(), checkMethod, m.HedgesWon)
	}
}

// routeRecorder records, per call, which backend each attempt reached. A call's first attempt
// blocks until cancelled; its hedge answers once the first attempt has arrived, so both
// attempts of every call reach a backend.
type routeRecorder struct {
	arrivals arrivals
	mu       sync.Mutex
	routes   map[string][2]string
}

func (r *routeRecorder) backend(int) *backend {
	return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		k := attemptOf(ctx)
		r.mu.Lock()
		route := r.routes[req.Service]
		route[min(k, 1)] = b.name
		r.routes[req.Service] = route
		r.mu.Unlock()
		arrived := r.arrivals.of(req.Service)
		if k == 0 {
			close(arrived)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return serving(), nil
	}}
}

func TestEachAttemptGoesToAnotherBackend(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " backends"), func(t *testing.T) {
			checkLeaks(t)
			rec := &routeRecorder{routes: map[string][2]string{}}
			bs := startBackends(t, n, rec.backend)
			hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
			client := healthpb.NewHealthClient(dial(t, hi, bs))
			const calls, workers = 1000, 8
			var next atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > calls {
							return
						}
						ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
						_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: fmt.Sprint(i)})
						cancel()
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.routes) != calls {
				t.Fatalf("%d calls recorded, want %d", len(rec.routes), calls)
			}
			same := 0
			used := map[string]int{}
			for _, r := range rec.routes {
				if r[0] == "" || r[1] == "" || r[0] == r[1] {
					same++
				}
				used[r[0]]++
			}
			if same != 0 {
				t.Fatalf("%d of %d calls did not send their two attempts to two backends", same, calls)
			}
			if len(used) != n {
				t.Fatalf("first attempts went to %v, want all %d backends", used, n)
			}
		})
	}
}

func TestNonIdempotentMethodReachesServerOnce(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	bs := startBackends(t, 3, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if req.Service == "fail" {
				return nil, status.Error(codes.Unavailable, "down")
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return serving(), nil
		}}
	})
	suppressed := make(chan hedge.Reason, 10)
	pc := hedgeNow()
	pc.Attempts = 3
	pc.Observer = func(e hedge.Event) {
		if e.Kind == hedge.HedgeSuppressed {
			suppressed <- e.Reason
		}
	}
	hi := newInterceptor(t, Config{Policy: pc}) // nothing marked idempotent
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	total := func() (n int32) {
		for _, b := range bs {
			n += b.calls.Load()
		}
		return n
	}

	done := make(chan error, 1)
	go func() {
		_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "slow"})
		done <- err
	}()
	// The hedge is due after a millisecond, and the core refuses it: not repeatable.
	select {
	case r := <-suppressed:
		if r != hedge.ReasonNotRepeatable {
			t.Fatalf("hedge suppressed for %v, want %v", r, hedge.ReasonNotRepeatable)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no hedge was suppressed")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := total(); n != 1 {
		t.Fatalf("the server saw %d calls, want 1", n)
	}

	// A non-fatal failure is not retried either.
	_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "fail"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want UNAVAILABLE", err)
	}
	if n := total(); n != 2 {
		t.Fatalf("the server saw %d calls, want 2", n)
	}

	// The caller's own word makes the same method repeatable.
	_, err = client.Check(hedge.WithRepeatable(t.Context(), true), &healthpb.HealthCheckRequest{Service: "fail"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want UNAVAILABLE", err)
	}
	if n := total(); n != 5 {
		t.Fatalf("the server saw %d calls, want 5 (three attempts of the last one)", n)
	}
}

// The hedge of a first call is answered with an overload signal; the next call's hedge is
// then suppressed by the overload gate for the pushback (or the policy's cool-down).
func TestPushbackPausesHedging(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     codes.Code
		pushback string
		// pause is how long hedging should pause for, from the overload answer.
		pause time.Duration
	}{
		{"positive", codes.ResourceExhausted, "60000", time.Minute},
		{"no pushback", codes.ResourceExhausted, "", 30 * time.Second},
		{"unavailable", codes.Unavailable, "60000", time.Minute},
		{"negative", codes.Unavailable, "-1", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			release := make(chan struct{})    // lets the first call's primary answer
			suppressed := make(chan struct{}) // closed at the second call's suppressed hedge
			bs := startBackends(t, 2, func(int) *backend {
				return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
					if attemptOf(ctx) > 0 {
						if tc.pushback != "" {
							grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, tc.pushback))
						}
						return nil, status.Error(tc.code, "busy")
					}
					wait := release
					if req.Service == "2" {
						wait = suppressed
					}
					select {
					case <-wait:
					case <-ctx.Done():
					case <-time.After(10 * time.Second): // a bound, never reached when the test passes
					}
					return serving(), nil
				}}
			})
			pc := hedgeNow()
			pc.OverloadCooldown = 30 * time.Second
			var once sync.Once
			pc.Observer = func(e hedge.Event) {
				if e.Kind == hedge.HedgeSuppressed && e.Reason == hedge.ReasonOverload {
					once.Do(func() { close(suppressed) })
				}
			}
			hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
			client := healthpb.NewHealthClient(dial(t, hi, bs))

			done := make(chan error, 1)
			go func() {
				_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "1"})
				done <- err
			}()
			// Hedging pauses once the client has the hedge's answer.
			if !waitFor(10*time.Second, func() bool { return hi.Policy(checkMethod).Measured().OverloadUntil.After(time.Now()) }) {
				t.Fatal("the overload signal did not pause hedging")
			}
			if left := time.Until(hi.Policy(checkMethod).Measured().OverloadUntil); left < tc.pause-10*time.Second || left > tc.pause {
				t.Errorf("hedging paused for %v more, want about %v", left, tc.pause)
			}
			close(release)
			// Even after a final answer (negative pushback), the primary still running wins.
			if err := <-done; err != nil {
				t.Fatalf("first call: %v, want the primary's OK", err)
			}

			// The next call's hedge is suppressed, and its primary answers.
			if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "2"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-suppressed:
			default:
				t.Fatal("the second call's hedge was not suppressed for overload")
			}
			if n := bs[0].calls.Load() + bs[1].calls.Load(); n != 3 {
				t.Fatalf("backends saw %d calls, want 3 (the second call sent once)", n)
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	checkLeaks(t)
	// Each request's Service names the codes its attempts answer, in attempt order.
	script := map[string][]codes.Code{
		"unavailable-then-ok": {codes.Unavailable, codes.OK},
		"not-found":           {codes.NotFound, codes.OK},
		"all-unavailable":     {codes.Unavailable, codes.Unavailable, codes.Unavailable},
	}
	bs := startBackends(t, 3, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			c := script[req.Service][attemptOf(ctx)]
			if c == codes.OK {
				return serving(), nil
			}
			grpc.SetTrailer(ctx, metadata.Pairs("attempt", fmt.Sprint(attemptOf(ctx))))
			return nil, status.Errorf(c, "attempt %d", attemptOf(ctx))
		}}
	})
	pc := hedge.Config{Attempts: 3, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: time.Microsecond}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	count := func() (n int32) {
		for _, b := range bs {
			n += b.calls.Swap(0)
		}
		return n
	}

	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "unavailable-then-ok"}); err != nil {
		t.Fatalf("UNAVAILABLE then OK: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("UNAVAILABLE then OK: %d attempts, want 2", n)
	}

	var trailer metadata.MD
	_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "not-found"}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.NotFound {
		t.Fatalf("NOT_FOUND: err = %v", err)
	}
	if n := count(); n != 1 {
		t.Fatalf("NOT_FOUND: %d attempts, want 1 (a final code is not retried)", n)
	}
	if got := trailer.Get("attempt"); len(got) != 1 || got[0] != "0" {
		t.Fatalf("NOT_FOUND: trailer %v, want the failing attempt's", trailer)
	}

	_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "all-unavailable"}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("all UNAVAILABLE: err = %v", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("all UNAVAILABLE: %d attempts, want 3", n)
	}
	var ae *hedge.AttemptsError
	if !errors.As(err, &ae) || len(ae.Attempts) != 3 {
		t.Fatalf("all UNAVAILABLE: err = %v, want a *hedge.AttemptsError of 3", err)
	}
	if st, _ := status.FromError(err); st.Message() != "attempt 2" {
		t.Fatalf("all UNAVAILABLE: status %v, want the last attempt's", st)
	}
	if got := trailer.Get("attempt"); len(got) != 1 || got[0] != "2" {
		t.Fatalf("all UNAVAILABLE: trailer %v, want the last attempt's", trailer)
	}
}

// A fast final failure from a hedge while the primary runs does not end the call: the
// primary's OK still wins; when every attempt fails, the final failure is the one returned,
// and between retriable failures, the last to answer.
func TestFinalFailureFromHedgeWhilePrimaryRuns(t *testing.T) {
	checkLeaks(t)
	// hedgeAnswered is closed when the client has taken the hedge's answer.
	var mu sync.Mutex
	hedgeAnswered := map[int64]chan struct{}{}
	answered := func(seq int64) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if hedgeAnswered[seq] == nil {
			hedgeAnswered[seq] = make(chan struct{})
		}
		return hedgeAnswered[seq]
	}
	var calls atomic.Int64
	script := map[string][2]codes.Code{ // primary, hedge
		"ok-after-not-found":          {codes.OK, codes.NotFound},
		"unavailable-after-not-found": {codes.Unavailable, codes.NotFound},
		"unavailable-twice":           {codes.Unavailable, codes.Unavailable},
	}
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			k := min(attemptOf(ctx), 1)
			c := script[req.Service][k]
			if k == 0 {
				// The primary answers only once the client has the hedge's answer.
				select {
				case <-answered(calls.Load()):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if c == codes.OK {
				return serving(), nil
			}
			return nil, status.Errorf(c, "attempt %d", k)
		}}
	})
	pc := hedgeNow()
	pc.Observer = func(e hedge.Event) {
		if e.Kind == hedge.AttemptFinished && e.Attempt == 1 {
			close(answered(calls.Load()))
		}
	}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	call := func(name string) error {
		calls.Add(1)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		return err
	}

	t.Run("primary OK wins", func(t *testing.T) {
		if err := call("ok-after-not-found"); err != nil {
			t.Fatalf("err = %v, want the primary's OK", err)
		}
	})
	t.Run("final failure named", func(t *testing.T) {
		err := call("unavailable-after-not-found")
		if st, _ := status.FromError(err); st.Code() != codes.NotFound || st.Message() != "attempt 1" {
			t.Fatalf("err = %v, want the hedge's NOT_FOUND", err)
		}
	})
	t.Run("last retriable named", func(t *testing.T) {
		err := call("unavailable-twice")
		if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != "attempt 0" {
			t.Fatalf("err = %v, want the primary's UNAVAILABLE, the last to answer", err)
		}
	})
}

func TestRepliesAreNotShared(t *testing.T) {
	checkLeaks(t)
	// Both attempts answer, with different replies; the caller's reply holds exactly the
	// winner's, with nothing of its previous content.
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if attemptOf(ctx) == 0 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
	cc := dial(t, hi, bs)
	reply := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}
	var header metadata.MD
	var p peer.Peer
	if err := cc.Invoke(t.Context(), checkMethod, &healthpb.HealthCheckRequest{}, reply, grpc.Header(&header), grpc.Peer(&p)); err != nil {
		t.Fatal(err)
	}
	if reply.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("reply %v, want the hedge's", reply)
	}
	if p.Addr == nil || header == nil {
		t.Fatalf("peer %v, header %v: not filled from the winner", p.Addr, header)
	}
	// The caller may reuse its request and reply as soon as the call returns, as after a
	// plain call: no losing attempt touches them any more (the race detector checks).
	req := &healthpb.HealthCheckRequest{}
	for i := range 20 {
		if err := cc.Invoke(t.Context(), checkMethod, req, reply); err != nil {
			t.Fatal(err)
		}
		req.Service = fmt.Sprint(i)
		reply.Status = healthpb.HealthCheckResponse_UNKNOWN
	}
}

func TestCallerCancellation(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		done <- err
	}()
	if !waitFor(10*time.Second, func() bool { return bs[0].calls.Load()+bs[1].calls.Load() == 2 }) {
		t.Fatal("the two attempts never reached the backends")
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want CANCELED", err)
	}
	if !waitFor(5*time.Second, func() bool { return bs[0].cancelled.Load()+bs[1].cancelled.Load() == 2 }) {
		t.Fatal("the backends' handlers did not see their contexts cancelled")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Policy: hedge.Config{Attempts: -1}},
		{Methods: map[string]hedge.Config{"Check": {}}},
		{Methods: map[string]hedge.Config{"/svc/": {Trigger: hedge.AtQuantile(2)}}},
		{Idempotent: []string{"grpc.health.v1.Health"}},
		{NonFatal: []codes.Code{codes.OK}},
	} {
		if _, err := NewInterceptor(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("NewInterceptor(%+v) = %v, want an error wrapping ErrConfig", cfg, err)
		}
	}
}

func TestPerMethodPolicies(t *testing.T) {
	hi := newInterceptor(t, Config{
		Policy: hedge.Config{},
		Methods: map[string]hedge.Config{
			"/a.S/":  {Trigger: hedge.After(time.Second)},
			"/a.S/M": {Trigger: hedge.After(2 * time.Second)},
		},
	})
	for _, name := range []string{"/a.S/M", "/a.S/N", "/b.T/M"} {
		hi.method(name)
	}
	want := map[string]string{"/a.S/M": "/a.S/M", "/a.S/N": "/a.S/", "/b.T/M": ""}
	for name, tmpl := range want {
		if got := hi.method(name).template; got != tmpl {
			t.Errorf("%s: built from template %q, want %q", name, got, tmpl)
		}
	}
	if hi.Policy("/a.S/M") == hi.Policy("/a.S/N") {
		t.Error("two methods share a policy")
	}
	if hi.Policy("/c.U/X") != nil {
		t.Error("a method never called has a policy")
	}
	if len(hi.Measured()) != 3 {
		t.Errorf("Measured has %d methods, want 3", len(hi.Measured()))
	}
}

// A panic further down the client's interceptor chain, in the first attempt (on the caller's
// goroutine) or in a hedge (on its own), ends the call cleanly and reaches the caller as a
// *hedge.PanicError; nothing is left running.
func TestPanicInAttempt(t *testing.T) {
	for _, which := range []int{0, 1} {
		t.Run(fmt.Sprint("attempt ", which), func(t *testing.T) {
			checkLeaks(t)
			be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
				<-ctx.Done() // every attempt that reaches the server waits until cancelled
				return nil, ctx.Err()
			}}
			boom := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if attemptIndex(ctx) == which {
					panic("boom")
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			}
			hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}})
			cc := startBufconnWith(t, hi, be, []grpc.DialOption{grpc.WithChainUnaryInterceptor(boom)})
			var got any
			func() {
				defer func() { got = recover() }()
				healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{})
			}()
			pe, ok := got.(*hedge.PanicError)
			if !ok || pe.Value != "boom" {
				t.Fatalf("recovered %v, want a *hedge.PanicError carrying boom", got)
			}
			if m := hi.Measured()[checkMethod]; m.InFlight != 0 {
				t.Fatalf("%d attempts still in flight", m.InFlight)
			}
		})
	}
}

// A panic in the policy's Observer ends the call cleanly and reaches the caller as a
// *hedge.PanicError, as in hedge.Do; the method's limit permits come back.
func TestPanicInObserver(t *testing.T) {
	checkLeaks(t)
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return &healthpb.HealthCheckResponse{}, nil
	}}
	pc := hedgeNow()
	pc.Limit = &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}
	pc.Observer = func(e hedge.Event) {
		if e.Kind == hedge.AttemptStarted {
			panic("observer")
		}
	}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(startBufconn(t, hi, be))
	for range 3 {
		var got any
		func() {
			defer func() { got = recover() }()
			client.Check(t.Context(), &healthpb.HealthCheckRequest{})
		}()
		if pe, ok := got.(*hedge.PanicError); !ok || pe.Value != "observer" {
			t.Fatalf("recovered %v, want a *hedge.PanicError carrying the observer's panic", got)
		}
		if m := hi.Measured()[checkMethod]; m.InFlight != 0 {
			t.Fatalf("%d permits still held after the observer panicked", m.InFlight)
		}
	}
}

func TestBreakerOpenFailsFast(t *testing.T) {
	checkLeaks(t)
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return nil, status.Error(codes.Unavailable, "down")
	}}
	pc := hedge.Config{Breaker: &breaker.Config{ConsecutiveFailures: 2}}
	hi := newInterceptor(t, Config{Policy: pc})
	client := healthpb.NewHealthClient(startBufconn(t, hi, be))
	for range 2 {
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
			t.Fatalf("err = %v, want UNAVAILABLE", err)
		}
	}
	_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if !errors.Is(err, hedge.ErrBreakerOpen) || status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want hedge.ErrBreakerOpen as UNAVAILABLE", err)
	}
	if n := be.calls.Load(); n != 2 {
		t.Fatalf("the server saw %d calls, want 2", n)
	}
}

// A backend that keeps failing is ejected by the core's outlier detection (package replica):
// after five failures in a row the balancer stops sending it attempts while others are fit.
func TestFailingBackendEjected(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 3, func(i int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if i == 0 {
				return nil, status.Error(codes.Unavailable, "broken")
			}
			return serving(), nil
		}}
	})
	hi := newInterceptor(t, Config{}) // every call sent once: the balancer alone decides
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	failed := 0
	for range 60 {
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			failed++
		}
	}
	if n := bs[0].calls.Load(); n != 5 || failed != 5 {
		t.Fatalf("the failing backend got %d calls (%d failed), want 5: ejected after 5 failures", n, failed)
	}
	if n := bs[1].calls.Load() + bs[2].calls.Load(); n != 55 {
		t.Fatalf("the healthy backends got %d calls, want 55", n)
	}
}

// Many concurrent calls whose attempts follow scripts (answer at once, fail, fail for good,
// or answer only when cancelled), some given up by their callers: every call ends as its
// script says, and nothing is left running (the race detector and the leak check watch the
// driver). A script never leaves a call waiting on an attempt that only a cancellation ends
// unless a later attempt succeeds. Some calls are not hedged (hedge.WithTrigger of none): their
// failures come back with nothing else in flight, so they are retried however long an
// attempt takes (on a busy machine, or with GOMAXPROCS=1, every failure may come after the
// millisecond's hedge, which makes the next attempt a hedge rather than a retry).
func TestConcurrentCallsScripted(t *testing.T) {
	checkLeaks(t)
	const blocks = codes.Aborted // stands for "answers only when cancelled"
	scripts := []struct {
		attempts []codes.Code
		want     codes.Code
		unhedged bool // sent with hedge.WithTrigger of none: each failure is retried
	}{
		{[]codes.Code{codes.OK}, codes.OK, false},
		{[]codes.Code{codes.Unavailable, codes.OK}, codes.OK, false},
		{[]codes.Code{blocks, codes.OK}, codes.OK, false},
		{[]codes.Code{codes.NotFound}, codes.NotFound, false},
		{[]codes.Code{blocks, codes.Unavailable, codes.OK}, codes.OK, false},
		{[]codes.Code{codes.Unavailable, codes.Unavailable, codes.Unavailable}, codes.Unavailable, false},
		{[]codes.Code{codes.Unavailable, codes.NotFound}, codes.NotFound, false},
		{[]codes.Code{codes.Unavailable, codes.OK}, codes.OK, true},
		{[]codes.Code{codes.Unavailable, codes.Unavailable, codes.Unavailable}, codes.Unavailable, true},
	}
	bs := startBackends(t, 3, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			var i int
			fmt.Sscan(req.Service, &i)
			script := scripts[i%len(scripts)].attempts
			switch c := script[min(attemptOf(ctx), len(script)-1)]; c {
			case codes.OK:
				return serving(), nil
			case blocks:
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Second): // a bound, never reached when the test passes
					return nil, status.Error(codes.Internal, "never cancelled")
				}
			default:
				return nil, status.Error(c, "scripted")
			}
		}}
	})
	pc := hedgeNow()
	pc.Attempts, pc.MaximumConcurrent = 3, 2
	pc.Backoff = hedge.Backoff{Initial: time.Microsecond}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{checkMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	const calls, workers = 700, 8
	var next atomic.Int32
	var wg sync.WaitGroup
	bad := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > calls {
					return
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				want := scripts[i%len(scripts)].want
				if scripts[i%len(scripts)].unhedged {
					ctx = hedge.WithTrigger(ctx, hedge.Trigger{})
				}
				if i%11 == 0 {
					cancel() // given up before it starts
					want = codes.Canceled
				}
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: fmt.Sprint(i)})
				cancel()
				if status.Code(err) != want {
					bad <- fmt.Errorf("call %d: %v, want %v", i, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatal(err)
	}
	if m := hi.Measured()[checkMethod]; m.InFlight != 0 || m.HedgesWon == 0 || m.Retries == 0 {
		t.Fatalf("measured %+v: want hedges won, retries, nothing in flight", m)
	}
}
