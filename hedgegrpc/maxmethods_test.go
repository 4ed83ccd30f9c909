package hedgegrpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Once MaxMethods methods have policies, a call to another one goes through as it is, once,
// and is counted; the method that has a policy keeps it and is retried as before.
func TestMaxMethodsBoundsThePolicies(t *testing.T) {
	checkLeaks(t)
	be := &backend{
		check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return nil, status.Error(codes.Unavailable, "down")
		},
		watch: func(*backend, *healthpb.HealthCheckRequest, grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
			return status.Error(codes.Unavailable, "down")
		},
	}
	hi := newInterceptor(t, Config{
		MaxMethods: 1,
		Idempotent: []string{"/grpc.health.v1.Health/"},
		Policy:     hedge.Config{Attempts: 2, Backoff: hedge.Backoff{Initial: time.Millisecond, Jitter: hedge.Off}},
	})
	client := healthpb.NewHealthClient(startBufconn(t, hi, be))

	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("Check: %v, want the backend's UNAVAILABLE", err)
	}
	if n := be.calls.Load(); n != 2 {
		t.Fatalf("Check reached the backend %d times, want 2: its policy retries", n)
	}
	s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Watch: %v, want the backend's UNAVAILABLE", err)
	}
	if n := be.calls.Load(); n != 3 {
		t.Errorf("Watch reached the backend %d times, want once: it has no policy", n-2)
	}
	if n := hi.OverMaxMethods(); n != 1 {
		t.Errorf("OverMaxMethods = %d, want 1", n)
	}
	if hi.Policy("/grpc.health.v1.Health/Check") == nil || hi.Policy("/grpc.health.v1.Health/Watch") != nil || len(hi.Measured()) != 1 {
		t.Error("want a policy for Check alone")
	}
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("Check again: %v", err)
	}
	if n := be.calls.Load(); n != 5 {
		t.Errorf("the second Check reached the backend %d times, want 2", n-3)
	}
}

func TestNegativeMaxMethodsIsRefused(t *testing.T) {
	if _, err := NewInterceptor(Config{MaxMethods: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewInterceptor(MaxMethods: -1) = %v, want an error wrapping ErrConfig", err)
	}
}
