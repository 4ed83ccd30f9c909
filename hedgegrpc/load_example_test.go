package hedgegrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ServerOptions installs the queue with its load reports: every call's trailer carries an ORCA
// per-call load report (gRFC A51) with the queue's figures, which the hedging balancer reads,
// and so can any ORCA-aware client (gRPC's weighted_round_robin among them). Here a plain
// client decodes it by hand.
func ExampleQueue_ServerOptions() {
	q, err := hedgegrpc.NewQueue(hedgegrpc.QueueConfig{
		Workers:          4,
		QueueHealthCheck: true, // the health service's Check stands in for real work here
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(append(q.ServerOptions(),
		grpc.ChainUnaryInterceptor(hedgegrpc.StartSignal),
		grpc.ChainStreamInterceptor(hedgegrpc.StreamStartSignal))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	var trailer metadata.MD
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
		log.Fatal(err)
	}
	var r v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(trailer.Get("endpoint-load-metrics-bin")[0]), &r); err != nil {
		log.Fatal(err)
	}
	m := r.GetNamedMetrics()
	fmt.Printf("queued %v, busy %v of %v workers, application utilization %v\n",
		m[hedgegrpc.MetricQueued], m[hedgegrpc.MetricBusy], m[hedgegrpc.MetricWorkers], r.GetApplicationUtilization())
	// Output:
	// queued 0, busy 1 of 4 workers, application utilization 0.25
}

// RegisterOOB serves the queue's load on the standard ORCA out-of-band stream (gRFC A51)
// instead of in every call's trailer: one report per connection every 50ms, whatever the call
// rate. A hedging client asks for it with Config.LoadReportInterval; any ORCA client can read
// it too, here gRPC's generated one.
func ExampleQueue_RegisterOOB() {
	q, err := hedgegrpc.NewQueue(hedgegrpc.QueueConfig{Workers: 4})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(q.UnaryServer), grpc.ChainStreamInterceptor(q.StreamServer))
	if err := q.RegisterOOB(srv, 50*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)

	// A hedging client: its balancer opens the stream to every backend and hands each
	// report to the policy and the replica choice.
	hi, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
		Policy:             hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		LoadReportInterval: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		log.Fatal(err)
	}

	// Any ORCA client reads the same stream.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := v3orcaservicegrpc.NewOpenRcaServiceClient(conn).StreamCoreMetrics(ctx,
		&v3orcaservicegrpc.OrcaLoadReportRequest{ReportInterval: durationpb.New(50 * time.Millisecond)})
	if err != nil {
		log.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		log.Fatal(err)
	}
	m := r.GetNamedMetrics()
	fmt.Printf("queued %v, busy %v of %v workers\n", m[hedgegrpc.MetricQueued], m[hedgegrpc.MetricBusy], m[hedgegrpc.MetricWorkers])

	// Shutting down: StopOOB ends the report streams, which GracefulStop would otherwise wait
	// for (the generated client's for as long as its connection lasts).
	q.StopOOB()
	srv.GracefulStop()
	for err == nil { // reports sent before the stop, then the stream's end
		_, err = stream.Recv()
	}
	fmt.Println("the stream after StopOOB:", status.Code(err))
	// Output:
	// queued 0, busy 0 of 4 workers
	// the stream after StopOOB: Unavailable
}
