package bench

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
)

const checkMethod = "/grpc.health.v1.Health/Check"

// startHealth serves grpc's own health service on loopback TCP for the benchmark.
func startHealth(b *testing.B) string {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// benchCheck makes sequential unary calls over conn and reports, beside ns/op, the median
// latency of one call (p50-ns), the figure the interceptor's overhead is judged on.
func benchCheck(b *testing.B, conn *grpc.ClientConn) {
	b.Helper()
	client := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	req := &healthpb.HealthCheckRequest{}
	for range 100 { // connect, and warm AtQuantile policies
		if _, err := client.Check(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		_, err := client.Check(ctx, req)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
}

func dialHealth(b *testing.B, target string, opts ...grpc.DialOption) *grpc.ClientConn {
	b.Helper()
	conn, err := grpc.NewClient(target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// BenchmarkGRPC is a unary call to a loopback server with no hedge firing: a plain call, the
// call through hedgegrpc (fixed delay, and AtQuantile once warm), and through failsafe-go's
// gRPC interceptor with its hedge policy. The server answers in tens of microseconds, far
// below every delay, so each figure is the cost a call pays when nothing goes wrong.
func BenchmarkGRPC(b *testing.B) {
	newInterceptor := func(b *testing.B, trig hedge.Trigger) *hedgegrpc.Interceptor {
		hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
			Policy:     hedge.Config{Trigger: trig},
			Idempotent: []string{checkMethod},
		})
		if err != nil {
			b.Fatal(err)
		}
		return hi
	}
	hedgesPerCall := func(b *testing.B, hi *hedgegrpc.Interceptor) {
		b.ReportMetric(float64(hi.Measured()[checkMethod].HedgesStarted)/float64(b.N), "hedges/op")
	}
	b.Run("plain", func(b *testing.B) {
		benchCheck(b, dialHealth(b, startHealth(b)))
	})
	b.Run("hedgegrpc-no-fire", func(b *testing.B) {
		hi := newInterceptor(b, hedge.After(noFireDelay))
		benchCheck(b, dialHealth(b, startHealth(b), grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithDisableRetry()))
		hedgesPerCall(b, hi)
	})
	b.Run("hedgegrpc-no-trigger", func(b *testing.B) {
		// A control: a policy that never hedges, so no timer is armed; what is left is the
		// attempt's goroutine and the interceptor's own work.
		hi := newInterceptor(b, hedge.Trigger{})
		benchCheck(b, dialHealth(b, startHealth(b), grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithDisableRetry()))
	})
	b.Run("hedgegrpc-quantile-no-fire", func(b *testing.B) {
		// AtQuantile(0.95) is silent until warm, then hedges about 5 % of calls; its
		// floor (MinimumDelay, 10ms) keeps it from firing on a loopback call.
		hi := newInterceptor(b, hedge.AtQuantile(0.95))
		benchCheck(b, dialHealth(b, startHealth(b), grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithDisableRetry()))
		hedgesPerCall(b, hi)
	})
	b.Run("hedgegrpc-dialoptions-no-fire", func(b *testing.B) {
		// Everything DialOptions installs: the stats handler and the hedging balancer too.
		hi := newInterceptor(b, hedge.After(noFireDelay))
		benchCheck(b, dialHealth(b, startHealth(b), hi.DialOptions()...))
		hedgesPerCall(b, hi)
	})
	b.Run("failsafe-no-fire", func(b *testing.B) {
		hp := hedgepolicy.NewBuilderWithDelay[any](noFireDelay).Build()
		benchCheck(b, dialHealth(b, startHealth(b), grpc.WithUnaryInterceptor(failsafegrpc.NewUnaryClientInterceptor[any](hp)), grpc.WithDisableRetry()))
	})
}

// BenchmarkGRPCPaired measures the same thing as BenchmarkGRPC, paired: each iteration makes
// one plain call and one through the interceptor (in alternating order), on two connections
// to the same server, so that both see the same machine at the same moments. On a shared
// machine whose load drifts during a run, this is the steadier figure. It reports both
// medians and the overhead of the median (overhead-%).
func BenchmarkGRPCPaired(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts func(b *testing.B) []grpc.DialOption
	}{
		{"hedgegrpc-no-fire", func(b *testing.B) []grpc.DialOption {
			hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
				Policy:     hedge.Config{Trigger: hedge.After(noFireDelay)},
				Idempotent: []string{checkMethod},
			})
			if err != nil {
				b.Fatal(err)
			}
			return []grpc.DialOption{grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithDisableRetry()}
		}},
		// Everything the README tells users to install: both interceptors, the start-signal
		// stats handler, gRPC's retries off and the hedging balancer.
		{"hedgegrpc-dialoptions-no-fire", func(b *testing.B) []grpc.DialOption {
			hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
				Policy:     hedge.Config{Trigger: hedge.After(noFireDelay)},
				Idempotent: []string{checkMethod},
			})
			if err != nil {
				b.Fatal(err)
			}
			return hi.DialOptions()
		}},
		{"failsafe-no-fire", func(b *testing.B) []grpc.DialOption {
			hp := hedgepolicy.NewBuilderWithDelay[any](noFireDelay).Build()
			return []grpc.DialOption{grpc.WithUnaryInterceptor(failsafegrpc.NewUnaryClientInterceptor[any](hp)), grpc.WithDisableRetry()}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			target := startHealth(b)
			plain := healthpb.NewHealthClient(dialHealth(b, target))
			wrapped := healthpb.NewHealthClient(dialHealth(b, target, tc.opts(b)...))
			ctx := context.Background()
			req := &healthpb.HealthCheckRequest{}
			call := func(c healthpb.HealthClient) time.Duration {
				start := time.Now()
				if _, err := c.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for range 1000 {
				call(plain)
				call(wrapped)
			}
			var lp, lw []time.Duration
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					lp = append(lp, call(plain))
					lw = append(lw, call(wrapped))
				} else {
					lw = append(lw, call(wrapped))
					lp = append(lp, call(plain))
				}
				i++
			}
			b.StopTimer()
			slices.Sort(lp)
			slices.Sort(lw)
			mp, mw := lp[len(lp)/2], lw[len(lw)/2]
			b.ReportMetric(float64(mp), "p50-plain-ns")
			b.ReportMetric(float64(mw), "p50-ns")
			b.ReportMetric(100*(float64(mw)/float64(mp)-1), "overhead-%")
		})
	}
}
