package hedgegrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func TestA6RetryableCodeOtherThanUnavailable(t *testing.T) {
	cfg, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],
	  "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["ABORTED"]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if calls.Add(1) == 1 {
			return nil, status.Error(codes.Aborted, "try again")
		}
		return serving(), nil
	}}
	cc := startBufconn(t, newInterceptor(t, cfg), be)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "x"})
	t.Logf("err=%v server calls=%d", err, calls.Load())
	if err != nil {
		t.Fatalf("retryableStatusCodes [ABORTED]: call failed with %v after %d attempt(s), want a retry that succeeds", err, calls.Load())
	}
}

func TestA6HedgingNonFatalOtherThanUnavailable(t *testing.T) {
	cfg, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],
	  "hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"10s","nonFatalStatusCodes":["ABORTED"]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	be := &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if calls.Add(1) == 1 {
			return nil, status.Error(codes.Aborted, "try another")
		}
		return serving(), nil
	}}
	cc := startBufconn(t, newInterceptor(t, cfg), be)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "x"})
	t.Logf("err=%v server calls=%d", err, calls.Load())
	if err != nil {
		t.Fatalf("nonFatalStatusCodes [ABORTED]: %v after %d attempt(s), want the next copy at once", err, calls.Load())
	}
}
