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

// A service config's retryableStatusCodes (retryPolicy) and nonFatalStatusCodes
// (hedgingPolicy) are acted on whatever the code, not only UNAVAILABLE (the interceptor's own
// NonFatal default): a call whose first attempt answers ABORTED goes on to a second that
// succeeds.
func TestA6CodesOtherThanUnavailable(t *testing.T) {
	for name, policy := range map[string]string{
		"retryPolicy": `"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["ABORTED"]}`,
		// The hedging delay is long: the second attempt is the one the failure sends at once.
		"hedgingPolicy": `"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"10s","nonFatalStatusCodes":["ABORTED"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],` + policy + `}]}`)
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			be := &backend{check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
				if calls.Add(1) == 1 {
					return nil, status.Error(codes.Aborted, "try again")
				}
				return serving(), nil
			}}
			cc := startBufconn(t, newInterceptor(t, cfg), be)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "x"}); err != nil || calls.Load() != 2 {
				t.Fatalf("ABORTED listed: %v after %d attempt(s), want a second attempt that succeeds", err, calls.Load())
			}
		})
	}
}
