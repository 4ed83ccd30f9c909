package hedgeotel_test

import (
	"context"
	"net"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
	"github.com/hedgekit/hedge/hedgeotel"
)

// A hedgegrpc.Interceptor is wired with KeyedObserver and Watch: its per-method policies are
// recorded under their full method names.
func TestGRPCInterceptor(t *testing.T) {
	checkGoroutines(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()

	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := hedgegrpc.Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}}
	cfg.Observer = m.KeyedObserver()
	ic, err := hedgegrpc.NewInterceptor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := m.Watch(ic.Measured)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	conn, err := grpc.NewClient(lis.Addr().String(), append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for range 3 {
		if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	ms := collect(t, reader)
	const method = "hedge.operation=/grpc.health.v1.Health/Check"
	equal(t, "hedge.calls", sums(t, ms, "hedge.calls"), map[string]int64{method + ",hedge.call.outcome=ok": 3})
	if dp := histogram(t, ms, "hedge.attempt.duration")[method+",hedge.attempt.kind=primary,hedge.attempt.outcome=ok"]; dp.Count != 3 {
		t.Errorf("attempt durations: %+v", dp)
	}
	equal(t, "hedge.win_rate.allowance", gauges[float64](t, ms, "hedge.win_rate.allowance"), map[string]float64{method: 1})
}
