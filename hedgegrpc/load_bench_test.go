package hedgegrpc

import (
	"context"
	"net"
	"testing"

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
