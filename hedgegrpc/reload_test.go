package hedgegrpc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Reconfigure gives a method called so far its new template at once, keeps the policy of one
// whose template is the same, and refuses an invalid configuration without changing anything.
func TestReconfigure(t *testing.T) {
	checkLeaks(t)
	// Attempts that reached a server, by the call's service name: a loser cancelled while its
	// request was still on its way never reaches one, so the counts say only what arrived, and
	// the policies say what was sent.
	var mu sync.Mutex
	arrived := map[string]int{}
	stuck := func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		mu.Lock()
		arrived[req.Service]++
		mu.Unlock()
		if attemptOf(ctx) == 0 {
			<-ctx.Done() // the primary answers only by losing
			return nil, ctx.Err()
		}
		return serving(), nil
	}
	bs := startBackends(t, 2, func(int) *backend { return &backend{check: stuck} })
	idem := []string{checkMethod}
	hi := newInterceptor(t, Config{Idempotent: idem})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	calls := func(service string) int {
		mu.Lock()
		defer mu.Unlock()
		return arrived[service]
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "a"})
	cancel()
	if m := hi.Policy(checkMethod).Measured(); status.Code(err) != codes.DeadlineExceeded || m.HedgesStarted != 0 || calls("a") != 1 {
		t.Fatalf("without a trigger: %v after %d hedges, %d attempts arrived; want the deadline, no hedge, 1", err, m.HedgesStarted, calls("a"))
	}
	first := hi.Policy(checkMethod)

	if err := hi.Reconfigure(hedgeNow(), nil, idem); err != nil {
		t.Fatal(err)
	}
	hedging := hi.Policy(checkMethod)
	if hedging == first {
		t.Fatal("Reconfigure kept the policy of a method whose template changed")
	}
	// The primary answers only by losing: an answer is the hedge's. (The primary itself may
	// not have reached its server when the hedge, 1 ms later, won.)
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second) // without a hedge the call never ends
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "b"})
	cancel()
	if err != nil || hedging.Measured().HedgesWon != 1 || calls("b") < 1 {
		t.Errorf("after Reconfigure: %v, %d hedges won, %d attempts arrived; want the hedge's answer", err, hedging.Measured().HedgesWon, calls("b"))
	}
	if err := hi.Reconfigure(hedgeNow(), map[string]hedge.Config{"/other.Service/": {}}, idem); err != nil || hi.Policy(checkMethod) != hedging {
		t.Errorf("Reconfigure without a change to the method: %v, policy kept %v", err, hi.Policy(checkMethod) == hedging)
	}
	for _, bad := range []struct {
		methods map[string]hedge.Config
		idem    []string
	}{
		{map[string]hedge.Config{"nope": {}}, idem},
		{map[string]hedge.Config{checkMethod: {Attempts: -1}}, idem},
		{nil, []string{"Check"}},
	} {
		if err := hi.Reconfigure(hedge.Config{}, bad.methods, bad.idem); !errors.Is(err, ErrConfig) || hi.Policy(checkMethod) != hedging {
			t.Errorf("Reconfigure(%v, %v): %v, policy kept %v", bad.methods, bad.idem, err, hi.Policy(checkMethod) == hedging)
		}
	}
	// A method's repeatability follows Idempotent too.
	if err := hi.Reconfigure(hedgeNow(), nil, nil); err != nil {
		t.Fatal(err)
	}
	before := hi.Policy(checkMethod).Measured() // the policy of "b" when the template is the same: its counts go on
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "c"})
	cancel()
	m := hi.Policy(checkMethod).Measured()
	hedges, refused := m.HedgesStarted-before.HedgesStarted, m.Suppressed[hedge.ReasonNotRepeatable]-before.Suppressed[hedge.ReasonNotRepeatable]
	if status.Code(err) != codes.DeadlineExceeded || hedges != 0 || refused != 1 || calls("c") != 1 {
		t.Errorf("no longer idempotent: %v, %d hedges, %d refused as not repeatable, %d attempts arrived; want the deadline, no hedge, 1, 1",
			err, hedges, refused, calls("c"))
	}
}

// DialOptions leaves the start-signal stats handler out when no trigger reads start signals,
// and Reconfigure then refuses one that does (it would never see a signal on that
// connection); an interceptor whose trigger reads them gets the handler, and one whose
// options were installed by hand may be reconfigured to such a trigger.
func TestDialOptionsStatsHandlerOnlyForStartSignals(t *testing.T) {
	// The options are opaque: the stats handler is the fifth, after the interceptors, the
	// retries and the balancer. That it works is TestStartSignalCancelsQueuedCopy's
	// (a Tied interceptor through DialOptions).
	hasHandler := func(opts []grpc.DialOption) bool { return len(opts) == 5 }
	tied := hedge.Config{Trigger: hedge.Tied()}
	idem := []string{checkMethod}

	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: idem})
	if opts := hi.DialOptions(); hasHandler(opts) {
		t.Fatalf("DialOptions without a start-signal trigger: %d options, want 4 (no stats handler)", len(opts))
	}
	if err := hi.Reconfigure(tied, nil, idem); !errors.Is(err, ErrConfig) {
		t.Fatalf("Reconfigure to Tied after DialOptions left the handler out: %v, want ErrConfig", err)
	}
	if err := hi.Reconfigure(hedgeNow(), map[string]hedge.Config{checkMethod: tied}, idem); !errors.Is(err, ErrConfig) {
		t.Fatalf("Reconfigure of one method to Tied after DialOptions left the handler out: %v, want ErrConfig", err)
	}
	if err := hi.Reconfigure(hedge.Config{Trigger: hedge.After(time.Second)}, nil, idem); err != nil {
		t.Fatalf("Reconfigure to a trigger that reads no start signals: %v", err)
	}

	for _, cfg := range []Config{{Policy: tied}, {Methods: map[string]hedge.Config{checkMethod: tied}}} {
		if opts := newInterceptor(t, cfg).DialOptions(); !hasHandler(opts) {
			t.Fatalf("DialOptions with Tied in %+v: no stats handler", cfg)
		}
	}
	byHand := newInterceptor(t, Config{Idempotent: idem})
	if err := byHand.Reconfigure(tied, nil, idem); err != nil {
		t.Fatalf("Reconfigure to Tied without DialOptions: %v", err)
	}
}
