package hedgegrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge/hedgegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// ServerOptions installs the queue with its load reports: every call's trailer carries an ORCA
// per-call load report (gRFC A51) with the queue's figures, which the hedging balancer reads,
// and so can any ORCA-aware client (gRPC's weighted_round_robin among them). Here a plain
// client decodes it by hand.
func ExampleQueue_ServerOptions() {
	q, err := hedgegrpc.NewQueue(hedgegrpc.QueueConfig{Workers: 4})
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
