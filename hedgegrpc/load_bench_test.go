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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hedgekit/hedge/workqueue"
)

// BenchmarkORCAReport is what the queue's ORCA per-call report costs a server: unary calls
// over bufconn to a handler that answers at once, behind a Queue with its report
// ([Queue.ServerOptions]: on) and without (the interceptor alone: off), from a plain client.
// Compare interleaved runs:
//
//	for i in $(seq 8); do go test -run '^$' -bench 'ORCAReport' -benchtime 20000x -count 1 ./hedgegrpc/ | grep Benchmark; done > /tmp/orca.txt
//
// On a shared machine BenchmarkORCAReportPaired is the steadier figure.
func BenchmarkORCAReport(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			q, err := NewQueue(QueueConfig{Workers: 64, QueueHealthCheck: true})
			if err != nil {
				b.Fatal(err)
			}
			opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(q.UnaryServer)}
			if mode == "on" {
				opts = q.ServerOptions()
			}
			client := dialAnswerAtOnce(b, opts...)
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
// a server with the queue alone (off) and one to a server with more (in alternating order),
// from one goroutine, so that both see the same machine at the same moments. It reports both
// medians and the overhead of the median (overhead-%) and of the mean (mean-overhead-%), the
// steadier figures on a shared machine. The second server has, in report, the queue's
// report ([Queue.ServerOptions]); in one-trailer, the queue alone and a fixed one-pair text
// trailer on every call: what grpc-go charges for a call to carry any trailer at all, the
// floor under a per-call report; in report-sized-trailer, a fixed report (the same bytes on
// every call, under the ORCA key): what the report's size costs in grpc-go, without the
// queue's work of reading its load and finding the trailer.
func BenchmarkORCAReportPaired(b *testing.B) {
	dial := dialAnswerAtOnce
	newQueue := func(b *testing.B) *Queue {
		q, err := NewQueue(QueueConfig{Workers: 64, QueueHealthCheck: true})
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	oneTrailer := metadata.Pairs("x", "1")
	// A report's trailer as the queue sends it at this benchmark's load, sent as it is.
	var buf [reportSize]byte
	sameSize := metadata.Pairs(orcaTrailerKey, string(appendReport(buf[:0], workqueue.Load{Busy: 1, Workers: 64, QPS: 40000})))
	fixed := func(md metadata.MD) func(q *Queue) []grpc.ServerOption {
		return func(q *Queue) []grpc.ServerOption {
			return []grpc.ServerOption{grpc.ChainUnaryInterceptor(q.UnaryServer,
				func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
					_ = grpc.SetTrailer(ctx, md)
					return handler(ctx, req)
				})}
		}
	}
	for _, tc := range []struct {
		name string
		opts func(q *Queue) []grpc.ServerOption
	}{
		{"report", (*Queue).ServerOptions},
		{"one-trailer", fixed(oneTrailer)},
		{"report-sized-trailer", fixed(sameSize)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			off := dial(b, grpc.ChainUnaryInterceptor(newQueue(b).UnaryServer))
			on := dial(b, tc.opts(newQueue(b))...)
			benchPaired(b, off, on)
		})
	}
}

// benchPaired alternates calls to off and on (see BenchmarkORCAReportPaired).
func benchPaired(b *testing.B, off, on healthpb.HealthClient) {
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
	b.ReportAllocs()
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

// dialAnswerAtOnce serves a health service that answers at once over bufconn, with the server
// options opts, and returns a plain client of it (no hedging balancer): the server side is
// what the report benchmarks compare.
func dialAnswerAtOnce(b *testing.B, opts ...grpc.ServerOption) healthpb.HealthClient {
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
