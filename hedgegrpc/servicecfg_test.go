package hedgegrpc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A service config as grpc-java users write it for hedging: Check is hedged, three copies at
// most, the next one second after the last, UNAVAILABLE non-fatal; tokens throttle copies.
const javaHedging = `{
  "methodConfig": [{
    "name": [{"service": "grpc.health.v1.Health", "method": "Check"}],
    "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

func TestConfigFromServiceConfigReadsA6(t *testing.T) {
	cfg, err := ConfigFromServiceConfig(javaHedging)
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := cfg.Methods[checkMethod]
	if !ok || len(cfg.Methods) != 1 || pc.Attempts != 3 || pc.MaximumConcurrent != 3 || pc.Trigger.String() != "after 1s" {
		t.Fatalf("Methods %v, want Check hedged after 1s, 3 attempts all concurrent", cfg.Methods)
	}
	if len(cfg.Idempotent) != 1 || cfg.Idempotent[0] != checkMethod {
		t.Fatalf("Idempotent %v, want Check alone", cfg.Idempotent)
	}
	if cfg.Policy.Trigger.String() != "none" {
		t.Fatalf("default policy %v, want no hedging", cfg.Policy.Trigger)
	}
	capped, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":9}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if capped.Policy.Attempts != MaxA6Attempts || !capped.a6.defaultRepeatable {
		t.Fatalf("default entry: %d attempts, repeatable %v; want 5 (A6's cap) and every method repeatable", capped.Policy.Attempts, capped.a6.defaultRepeatable)
	}
}

func TestConfigFromServiceConfigErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ json, field string }{
		{`{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":1}}]}`, "methodConfig[0].hedgingPolicy.maxAttempts"},
		{`{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"1m"}}]}`, "methodConfig[0].hedgingPolicy.hedgingDelay"},
		{`{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2,"nonFatalStatusCodes":["NOPE"]}}]}`, "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]"},
		{`{"methodConfig":[{"name":[{"service":"s"}],"hedgingPolicy":{"maxAttempts":2},"retryPolicy":{}}]}`, "methodConfig[0]: has both"},
		{`{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2}}]}`, "methodConfig[0].retryPolicy.retryableStatusCodes"},
		{`{"methodConfig":[{"name":[{"service":"s"}],"retryPolicy":{"maxAttempts":2,"maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":[14]}}]}`, "methodConfig[0].retryPolicy.initialBackoff"},
		{`{"methodConfig":[{"name":[{"method":"m"}]}]}`, "methodConfig[0].name[0].method"},
		{`{"methodConfig":[{"name":[{"service":"s"}]},{"name":[{"service":"s"}]}]}`, "methodConfig[1].name[0]"},
		{`{"retryThrottling":{"maxTokens":0,"tokenRatio":0.1}}`, "retryThrottling.maxTokens"},
		{`{"retryThrottling":{"maxTokens":10}}`, "retryThrottling.tokenRatio"},
	} {
		_, err := ConfigFromServiceConfig(c.json)
		if !errors.Is(err, ErrServiceConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want ErrServiceConfig naming %s", c.json, err, c.field)
		}
	}
}

// a6Backends starts three backends whose first attempts answer with first (nil: they wait
// until cancelled) and whose copies answer OK.
func a6Backends(t *testing.T, first error, copies *atomic.Int32) []*backend {
	return startBackends(t, 3, func(int) *backend {
		return &backend{check: func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if attemptOf(ctx) == 0 {
				if first != nil {
					return nil, first
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			copies.Add(1)
			if first == nil {
				<-ctx.Done() // with a fatal first answer the copies must be cancelled
				return nil, ctx.Err()
			}
			return serving(), nil
		}}
	})
}

// Through DialOptions, the grpc-java config hedges Check as A6 says: a non-fatal answer sends
// the next copy at once (long before the 1s hedging delay), a fatal one commits the call.
func TestServiceConfigHedgesLikeA6(t *testing.T) {
	checkLeaks(t)
	cfg, err := ConfigFromServiceConfig(javaHedging)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("non-fatal sends the next copy at once", func(t *testing.T) {
		var copies atomic.Int32
		bs := a6Backends(t, status.Error(codes.Unavailable, "down"), &copies)
		client := healthpb.NewHealthClient(dial(t, newInterceptor(t, cfg), bs))
		ctx, cancel := context.WithTimeout(t.Context(), 900*time.Millisecond) // under the delay
		defer cancel()
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("Check: %v, want the copy sent at once to answer", err)
		}
		if copies.Load() != 1 {
			t.Fatalf("%d copies, want 1", copies.Load())
		}
	})
	t.Run("fatal commits", func(t *testing.T) {
		zero := strings.Replace(javaHedging, `"1s"`, `"0s"`, 1) // every copy at once
		cfg, err := ConfigFromServiceConfig(zero)
		if err != nil {
			t.Fatal(err)
		}
		var copies atomic.Int32
		bs := a6Backends(t, status.Error(codes.InvalidArgument, "bad"), &copies)
		// The first attempt fails at once; copies never answer: only a commit ends the call.
		for _, b := range bs {
			check := b.check
			b.check = func(ctx context.Context, b *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
				if attemptOf(ctx) > 0 {
					copies.Add(1)
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return check(ctx, b, req)
			}
		}
		client := healthpb.NewHealthClient(dial(t, newInterceptor(t, cfg), bs))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("Check: %v, want INVALID_ARGUMENT at once", err)
		}
	})
	t.Run("Watch is not named: sent once", func(t *testing.T) {
		hi := newInterceptor(t, cfg)
		if m := hi.method(watchMethod); m.repeatable || m.policy.Measured().HedgesStarted != 0 {
			t.Fatal("Watch is repeatable, but the config names Check alone")
		}
	})
}

// retryThrottling: once failures have taken the tokens to half of maxTokens, calls are sent
// once, not hedged.
func TestServiceConfigThrottles(t *testing.T) {
	checkLeaks(t)
	cfg, err := ConfigFromServiceConfig(strings.Replace(javaHedging, `"maxTokens": 10`, `"maxTokens": 1`, 1))
	if err != nil {
		t.Fatal(err)
	}
	var copies atomic.Int32
	bs := a6Backends(t, status.Error(codes.Unavailable, "down"), &copies)
	client := healthpb.NewHealthClient(dial(t, newInterceptor(t, cfg), bs))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("first call: %v (its copy should answer)", err)
	}
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("second call: %v, want UNAVAILABLE: throttled, it is sent once", err)
	}
	if copies.Load() != 1 {
		t.Fatalf("%d copies, want the first call's alone", copies.Load())
	}
}
