package hedgegrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func abortedWithPushback(calls *atomic.Int32, pb string) *backend {
	return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		calls.Add(1)
		grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, pb))
		return nil, status.Error(codes.Aborted, "aborted, do not retry")
	}}
}

// gRFC A6 (and grpc-go's own retry code): a negative or unparsable pushback means "do not
// retry", whatever the code: a retryPolicy whose retryableStatusCodes has ABORTED does not
// retry an ABORTED that carries grpc-retry-pushback-ms: -1 (or abc).
func TestNegativePushbackEndsA6Retries(t *testing.T) {
	checkLeaks(t)
	cfg, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],
	  "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["ABORTED"]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, pb := range []string{"-1", "abc"} {
		t.Run(pb, func(t *testing.T) {
			var calls atomic.Int32
			bs := startBackends(t, 1, func(int) *backend { return abortedWithPushback(&calls, pb) })
			client := healthpb.NewHealthClient(dial(t, newInterceptor(t, cfg), bs))
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			if status.Code(err) != codes.Aborted {
				t.Fatalf("Check: %v, want ABORTED", err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("server saw %d attempts, want 1: pushback %q says do not retry", n, pb)
			}
		})
	}
}

// PushbackKey's doc: a negative pushback "means do not retry: the attempt's failure is
// final", for a code in Config.NonFatal too.
func TestNegativePushbackEndsNonFatalRetries(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int32
	bs := startBackends(t, 1, func(int) *backend { return abortedWithPushback(&calls, "-1") })
	pol := hedge.Config{Attempts: 3, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Initial: time.Millisecond, Maximum: time.Millisecond, Jitter: hedge.Off}}
	hi := newInterceptor(t, Config{Policy: pol, Idempotent: []string{"/grpc.health.v1.Health/"}, NonFatal: []codes.Code{codes.Unavailable, codes.Aborted}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Aborted {
		t.Fatalf("Check: %v, want ABORTED", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("server saw %d attempts, want 1: a negative pushback makes the failure final", n)
	}
}
