package hedgegrpc

import (
	"context"
	"net"
	"testing"
	"time"

	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// A plain ORCA client keeps its out-of-band report stream for as long as its connection
// lasts, and grpc.Server.GracefulStop waits for every stream: without StopOOB, a server
// shutting down gracefully waited for as long as such a client stayed. StopOOB ends the
// stream, refuses a new one, and GracefulStop then returns.
func TestStopOOBEndsTheStreamsGracefulStopWaitsFor(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(q.ServerOptions()...)
	if err := q.RegisterOOB(srv, 0); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()
	cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// The deadline only bounds a failing run: a stream StopOOB did not end would end with it,
	// DeadlineExceeded, not Unavailable.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	client := v3orcaservicegrpc.NewOpenRcaServiceClient(cc)
	stream, err := client.StreamCoreMetrics(ctx, &v3orcaservicegrpc.OrcaLoadReportRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil { // the stream is open at the server
		t.Fatal(err)
	}
	q.StopOOB()
	for {
		_, err := stream.Recv()
		if err == nil {
			continue // a report sent before the stop
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the open stream after StopOOB: %v, want Unavailable", err)
		}
		break
	}
	again, err := client.StreamCoreMetrics(ctx, &v3orcaservicegrpc.OrcaLoadReportRequest{})
	if err == nil {
		_, err = again.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a stream opened after StopOOB: %v, want Unavailable", err)
	}
	q.StopOOB()        // again: nothing
	srv.GracefulStop() // returns: no stream is left for it to wait for
}
