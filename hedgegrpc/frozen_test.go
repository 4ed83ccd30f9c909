package hedgegrpc

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// One backend of three freezes: still connected and READY, it accepts every request and never
// answers. With the recommended policy, warm from a second of calls to three healthy
// backends, and a 1 s deadline per call, hedges rescue the calls whose first attempt went to
// the frozen one (the backlog gate sees that the calls crossing their threshold are that
// backend's, not the dependency's): nearly every one of 600 calls succeeds (599 or 600 in most
// runs), and the healthy backends keep their share of the requests to the end.
func TestFrozenBackendRecommended(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	var frozen atomic.Bool
	bs := startBackends(t, 3, func(i int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if i == 0 && frozen.Load() {
				select { // frozen: no answer until the caller gives up (or the test ends)
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-release:
					return serving(), nil
				}
			}
			time.Sleep(time.Millisecond) // a little work, so calls overlap
			return serving(), nil
		}}
	})
	t.Cleanup(func() { close(release) })
	var mu sync.Mutex
	why := map[string]int{}
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: func(e hedge.Event) {
		if e.Kind == hedge.HedgeSuppressed || e.Kind == hedge.HedgeStarted {
			mu.Lock()
			why[e.Kind.String()+" "+e.Reason.String()]++
			mu.Unlock()
		}
	}},
		Idempotent: []string{"/grpc.health.v1.Health/"}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))

	const calls, workers = 600, 8
	// A second of calls (at most 5000) to three healthy backends: the policy learns its
	// threshold and its budget fills as a running service's would.
	var wg sync.WaitGroup
	warm := time.Now().Add(time.Second)
	var warmed atomic.Int32
	for range workers {
		wg.Go(func() {
			for time.Now().Before(warm) && warmed.Add(1) <= 5000 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					t.Errorf("a call to healthy backends failed: %v", err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	frozen.Store(true)
	for _, b := range bs {
		b.calls.Store(0)
	}

	var ok, done atomic.Int32
	var snap [3]atomic.Int32 // each backend's requests when the last 120 calls began
	var snapOnce sync.Once
	end := time.Now().Add(60 * time.Second)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				n := done.Add(1)
				if n > calls {
					return
				}
				if n == calls-120 {
					snapOnce.Do(func() {
						for i := range bs {
							snap[i].Store(bs[i].calls.Load())
						}
					})
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				if err == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := ok.Load(); got < 597 {
		t.Errorf("%d of %d calls succeeded with one backend of three frozen; want at least 597 (599 in most runs)", got, calls)
	}
	var last [3]int32 // requests per backend during the last 120 calls
	for i := range bs {
		last[i] = bs[i].calls.Load() - snap[i].Load()
	}
	for i := 1; i < 3; i++ {
		if last[i] < 20 {
			t.Errorf("healthy backend %d got %d requests during the last 120 calls: it looks ejected", i, last[i])
		}
	}
	mu.Lock()
	t.Logf("hedges: %v", why)
	mu.Unlock()
	if bs[0].calls.Load() == 0 {
		t.Error("the frozen backend got no call: the test exercised nothing")
	}
	t.Logf("succeeded %d of %d; during the last 120 calls the backends got %d, %d, %d requests",
		ok.Load(), calls, last[0], last[1], last[2])
}
