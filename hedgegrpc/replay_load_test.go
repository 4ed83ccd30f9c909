package hedgegrpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// The per-call ORCA report of a hedged client-streaming call never reaches its policy: the
// replay stream leaves route.policy nil.
func TestReplayStreamLoadReportReachesPolicy(t *testing.T) {
	q, err := NewQueue(QueueConfig{Workers: 5, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(q.ServerOptions()...)
	testpb.RegisterTestServiceServer(srv, &replayTestServer{fail: func(int32) error { return nil }})
	be := answerAtOnce()
	healthpb.RegisterHealthServer(srv, be)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Idempotent: []string{"/grpc.testing.TestService/", "/grpc.health.v1.Health/"}})
	cc, err := grpc.NewClient(lis.Addr().String(), append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	st, err := testpb.NewTestServiceClient(cc).StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("abc")}})
	if _, err := st.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	_, wu, oku := hi.Policy(checkMethod).ServerQueue(time.Now())
	_, ws, oks := hi.Policy(inputMethod).ServerQueue(time.Now())
	t.Logf("unary Check policy: ServerQueue ok=%v workers=%d; client-streaming policy: ok=%v workers=%d", oku, wu, oks, ws)
	if !oks {
		t.Fatal("the client-streaming call's load report never reached its policy")
	}
}
