package hedgegrpc

import (
	"context"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A backend that swallows requests (answers nothing until cancelled) while hedges rescue every
// call: no attempt fails, yet the balancer's done callbacks report its cancelled losers as
// replica.Slow, and once they have kept losing for replica.DefaultSlowFor it is ejected and
// gets no more attempts.
func TestSwallowingBackendEjected(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 2, func(i int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if i == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
				return nil, status.Error(codes.DeadlineExceeded, "swallowed")
			}
			return serving(), nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedge.Config{
		Trigger: hedge.After(5 * time.Millisecond),
		Budget:  budget.Config{Off: true},
	}, Idempotent: []string{"/grpc.health.v1.Health/"}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	call := func() {
		t.Helper()
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("a call failed: %v; every call should be rescued by its hedge", err)
		}
	}
	// Calls for a little longer than the losers need to get the backend ejected, bounded.
	end := time.Now().Add(replica.DefaultSlowFor + 300*time.Millisecond)
	for n := 0; n < 1000 && time.Now().Before(end); n++ {
		call()
	}
	if bs[0].calls.Load() < int32(replica.DefaultConsecutiveSlow) {
		t.Fatalf("the swallowing backend got %d calls: the test did not exercise it", bs[0].calls.Load())
	}
	before := bs[0].calls.Load()
	for range 20 {
		call()
	}
	if n := bs[0].calls.Load() - before; n != 0 {
		t.Fatalf("the swallowing backend got %d of the last 20 calls; want it ejected", n)
	}
}
