package hedgeconfig_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hedgekit/hedge/hedgegrpc"
)

// The example file configures a real hedgegrpc interceptor: each gRPC operation's policy is
// the one its method runs under.
func TestExampleFileDrivesGRPC(t *testing.T) {
	checkGoroutines(t)
	f := load(t, "testdata/policy.yaml")
	// The example, with the health service's Check as an operation of its own.
	src, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, []byte("  /grpc.health.v1.Health/Check:\n    trigger: after 40ms\n    idempotent: true\n")...)
	f2, err := parseString(string(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	g := f2.GRPC()
	if len(g.Methods) != 3 || !slices.Equal(g.Idempotent, []string{"/grpc.health.v1.Health/Check"}) {
		t.Fatalf("GRPC() = %+v", g)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	ic, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{Policy: g.Policy, Methods: g.Methods, Idempotent: g.Idempotent})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	m, ok := ic.Measured()["/grpc.health.v1.Health/Check"]
	if !ok || !m.Warm || m.Threshold != 40*time.Millisecond || m.Breaker != "closed" || m.Limit == 0 {
		t.Errorf("the method's policy is not the file's: %+v", m)
	}
	if ic.Policy("/grpc.health.v1.Health/Check") == nil {
		t.Error("no policy for the method")
	}
}
