package hedgegrpc

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// BenchmarkORCAReport is what the queue's ORCA per-call report costs a server: unary calls
// over bufconn to a handler that answers at once, behind a Queue with its report
// ([Queue.ServerOptions]: on) and without (the interceptor alone: off), from a plain client.
// Compare interleaved runs:
//
//	for i in $(seq 8); do go test -run '^$' -bench 'ORCAReport' -benchtime 20000x -count 1 ./hedgegrpc/ | grep Benchmark; done > /tmp/orca.txt
func BenchmarkORCAReport(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			q, err := NewQueue(QueueConfig{Workers: 64})
			if err != nil {
				b.Fatal(err)
			}
			opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(q.UnaryServer)}
			if mode == "on" {
				opts = q.ServerOptions()
			}
			lis := bufconn.Listen(1 << 20)
			srv := grpc.NewServer(opts...)
			healthpb.RegisterHealthServer(srv, answerAtOnce())
			go srv.Serve(lis)
			b.Cleanup(srv.Stop)
			cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cc.Close() })
			client := healthpb.NewHealthClient(cc)
			ctx := context.Background()
			if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := &healthpb.HealthCheckRequest{}
				for pb.Next() {
					if _, err := client.Check(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkORCAReportPaired is BenchmarkORCAReport paired: each iteration makes one call to
// a server with the queue alone and one to a server with [Queue.ServerOptions] (in
// alternating order), from one goroutine, so that both see the same machine at the same
// moments. It reports both medians and the report's overhead of the median (overhead-%) and
// of the mean (mean-overhead-%), the steadier figures on a shared machine.
func BenchmarkORCAReportPaired(b *testing.B) {
	dial := func(b *testing.B, opts ...grpc.ServerOption) healthpb.HealthClient {
		lis := bufconn.Listen(1 << 20)
		srv := grpc.NewServer(opts...)
		healthpb.RegisterHealthServer(srv, answerAtOnce())
		go srv.Serve(lis)
		b.Cleanup(srv.Stop)
		cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		return healthpb.NewHealthClient(cc)
	}
	newQueue := func(b *testing.B) *Queue {
		q, err := NewQueue(QueueConfig{Workers: 64})
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	off := dial(b, grpc.ChainUnaryInterceptor(newQueue(b).UnaryServer))
	on := dial(b, newQueue(b).ServerOptions()...)
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
		call(off)
		call(on)
	}
	var loff, lon []time.Duration
	var soff, son time.Duration
	i := 0
	for b.Loop() {
		var a, c time.Duration
		if i%2 == 0 {
			a = call(off)
			c = call(on)
		} else {
			c = call(on)
			a = call(off)
		}
		loff, lon = append(loff, a), append(lon, c)
		soff, son = soff+a, son+c
		i++
	}
	b.StopTimer()
	slices.Sort(loff)
	slices.Sort(lon)
	moff, mon := loff[len(loff)/2], lon[len(lon)/2]
	b.ReportMetric(float64(moff), "p50-off-ns")
	b.ReportMetric(float64(mon), "p50-ns")
	b.ReportMetric(100*(float64(mon)/float64(moff)-1), "overhead-%")
	b.ReportMetric(100*(float64(son)/float64(soff)-1), "mean-overhead-%")
}
