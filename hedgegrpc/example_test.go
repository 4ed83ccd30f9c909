package hedgegrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// An Interceptor is built once and shared: each method it calls gets its own policy, which
// learns that method's latency. Only methods known to be safe to send twice are hedged.
// DialOptions installs the interceptors and the balancer that sends each attempt of a call to
// a different backend, and turns gRPC's own retries off (and, for a trigger that reads start
// signals, installs the start-signal stats handler).
func ExampleNewInterceptor() {
	// A server: grpc's own health service, on loopback.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	target := lis.Addr().String()

	hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
		Policy:     hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		Idempotent: []string{"/grpc.health.v1.Health/Check"},
	})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient(target, append(hi.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.GetStatus())
	m := hi.Measured()["/grpc.health.v1.Health/Check"]
	fmt.Println(m.Calls, "call, warm:", m.Warm)
	// Output:
	// SERVING
	// 1 call, warm: false
}

// slowFirst is a health service whose first attempts wait until their client cancels them,
// and whose hedged copies (marked with the AttemptKey metadata) answer at once.
type slowFirst struct {
	healthpb.UnimplementedHealthServer
}

func (s *slowFirst) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(hedgegrpc.AttemptKey)) == 0 {
		<-ctx.Done() // the slow first attempt: it waits until it loses, and is cancelled
		return nil, ctx.Err()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// When the first attempt is slow, the hedge answers, and the loser is cancelled on the server
// too. The server tells a hedged copy by its AttemptKey metadata.
func ExampleInterceptor_UnaryClient() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &slowFirst{})
	go srv.Serve(lis)
	defer srv.Stop()

	hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
		// A fixed delay, so the example hedges on its first call; AtQuantile learns one.
		Policy:     hedge.Config{Trigger: hedge.After(5 * time.Millisecond)},
		Idempotent: []string{"/grpc.health.v1.Health/"},
	})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), append(hi.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	m := hi.Measured()["/grpc.health.v1.Health/Check"]
	fmt.Println(resp.GetStatus(), "from the hedge; hedges won:", m.HedgesWon)
	// Output:
	// SERVING from the hedge; hedges won: 1
}

// On the server, a Queue bounds the handlers running at once, so that a losing copy that its
// client cancelled leaves the queue without running; StartSignal, chained after it, tells
// the client when a worker starts its call.
func ExampleQueue() {
	q, err := hedgegrpc.NewQueue(hedgegrpc.QueueConfig{Workers: 16})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(q.UnaryServer, hedgegrpc.StartSignal),
		grpc.ChainStreamInterceptor(q.StreamServer, hedgegrpc.StreamStartSignal),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	fmt.Printf("%+v\n", q.Stats())
	// Output:
	// {Workers:16 Capacity:16 Running:0 Queued:0 QueuedHedged:0 Admitted:0 Rejected:0 Abandoned:0 Evicted:0 Cancelled:0}
}
