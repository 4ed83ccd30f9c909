package hedgegrpc

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A client with gRPC's client-side health checking keeps a health Watch stream open on its
// connection for as long as the connection lives. Behind the queue that stream holds no
// worker: with one worker, the connection's calls still run.
func TestHealthWatchHoldsNoWorker(t *testing.T) {
	checkLeaks(t)
	for _, name := range []string{"ServerOptions", "StreamServer"} {
		t.Run(name, func(t *testing.T) {
			q, err := NewQueue(QueueConfig{Workers: 1, Queue: -1, QueueHealthCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			opts := q.ServerOptions()
			if name == "StreamServer" {
				opts = []grpc.ServerOption{grpc.UnaryInterceptor(q.UnaryServer), grpc.StreamInterceptor(q.StreamServer)}
			}
			lis := listen(t)
			srv := grpc.NewServer(opts...)
			hs := health.NewServer()
			healthpb.RegisterHealthServer(srv, hs)
			go srv.Serve(lis)
			t.Cleanup(func() { hs.Shutdown(); srv.Stop() })
			const sc = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": ""}}`
			cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(sc))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cc.Close() })
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			// The connection is READY only once its health stream has said SERVING.
			for i := range 3 {
				if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
					t.Fatalf("call %d: %v (Stats %+v: the health stream holds the only worker)", i, err, q.Stats())
				}
			}
			if s := q.Stats(); s.Running != 0 || s.Admitted != 3 || s.Rejected != 0 {
				t.Fatalf("Stats %+v, want the 3 calls admitted and no worker held", s)
			}
		})
	}
}

// A call the queue turns away carries the queue's report too: a full queue is the load a
// client most needs to hear of.
func TestRejectedCallCarriesReport(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, Queue: -1, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	bs := startBackends(t, 1, holdingBackend(release), q.ServerOptions()...)
	var blockers sync.WaitGroup
	t.Cleanup(func() { close(release); blockers.Wait() })
	block(t, bs[0].addr, 1, &blockers)
	if !waitFor(5*time.Second, func() bool { return q.Stats().Running == 1 }) {
		t.Fatal("the blocking call never took the worker")
	}
	cc, err := grpc.NewClient(bs[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	var tr metadata.MD
	_, err = healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&tr))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("err = %v, want RESOURCE_EXHAUSTED", err)
	}
	if got := tr.Get(PushbackKey); len(got) != 1 || got[0] != "1000" {
		t.Errorf("pushback trailer %v, want 1000", got)
	}
	v := tr.Get(orcaTrailer)
	if len(v) != 1 {
		t.Fatalf("trailer %v: want one ORCA report", tr)
	}
	var r v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(v[0]), &r); err != nil {
		t.Fatal(err)
	}
	if l, ok := loadOf(&r); !ok || l.Busy != 1 || l.Workers != 1 {
		t.Fatalf("report %+v, %v; want 1 of 1 workers busy", l, ok)
	}
}

// oneMessageService answers a server-streaming call with one message.
type oneMessageService struct {
	testpb.UnimplementedTestServiceServer
}

func (oneMessageService) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	return s.Send(&testpb.StreamingOutputCallResponse{})
}

// A stream's report is not handed to the policy: its end can reach the caller long before the
// caller reads it, and a report stamped then would count as fresh after it had gone stale. A
// unary call's, right after its trailer, is.
func TestStreamReportsAreLeftOut(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 5, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	lis := listen(t)
	be := answerAtOnce()
	be.addr = lis.Addr().String()
	srv := grpc.NewServer(q.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, be)
	testpb.RegisterTestServiceServer(srv, oneMessageService{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}})
	cc := dial(t, hi, []*backend{be})
	const outputMethod = "/grpc.testing.TestService/StreamingOutputCall"
	client := testpb.NewTestServiceClient(cc)
	for _, repeatable := range []bool{true, false} { // hedged, and passed through
		var tr metadata.MD
		s, err := client.StreamingOutputCall(hedge.WithRepeatable(t.Context(), repeatable), &testpb.StreamingOutputCallRequest{}, grpc.Trailer(&tr))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != io.EOF {
			t.Fatalf("second Recv: %v, want io.EOF", err)
		}
		if len(tr.Get(orcaTrailer)) != 1 {
			t.Fatalf("the stream's trailer %v carries no report: nothing to leave out", tr)
		}
	}
	if _, _, ok := hi.Policy(outputMethod).ServerQueue(time.Now()); ok {
		t.Error("a stream's per-call report reached its policy")
	}
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, w, ok := hi.Policy(checkMethod).ServerQueue(time.Now()); !ok || w != 5 {
		t.Errorf("a unary call's report: ServerQueue workers %d, %v; want 5, true", w, ok)
	}
}

// holdingTestService holds each UnaryCall until release is closed, after telling started.
type holdingTestService struct {
	testpb.UnimplementedTestServiceServer
	started chan struct{}
	release chan struct{}
}

func (s holdingTestService) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.started <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return &testpb.SimpleResponse{}, nil
}

// A health Check, which Kubernetes' gRPC probes and load balancers call, takes no worker by
// default: with the only worker busy and no room to wait, the probe is still answered
// SERVING, where a queued one would be turned away RESOURCE_EXHAUSTED and a busy server
// restarted. QueueHealthCheck queues it like any other call.
func TestHealthCheckTakesNoWorker(t *testing.T) {
	checkLeaks(t)
	for _, name := range []string{"ServerOptions", "UnaryServer", "QueueHealthCheck"} {
		t.Run(name, func(t *testing.T) {
			q, err := NewQueue(QueueConfig{Workers: 1, Queue: -1, QueueHealthCheck: name == "QueueHealthCheck"})
			if err != nil {
				t.Fatal(err)
			}
			opts := q.ServerOptions()
			if name == "UnaryServer" {
				opts = []grpc.ServerOption{grpc.UnaryInterceptor(q.UnaryServer)}
			}
			lis := listen(t)
			srv := grpc.NewServer(opts...)
			healthpb.RegisterHealthServer(srv, health.NewServer())
			svc := holdingTestService{started: make(chan struct{}, 1), release: make(chan struct{})}
			testpb.RegisterTestServiceServer(srv, svc)
			go srv.Serve(lis)
			t.Cleanup(srv.Stop)
			cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cc.Close() })
			held := make(chan error, 1)
			go func() {
				_, err := testpb.NewTestServiceClient(cc).UnaryCall(t.Context(), &testpb.SimpleRequest{})
				held <- err
			}()
			select {
			case <-svc.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the holding call never started")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if name == "QueueHealthCheck" {
				if status.Code(err) != codes.ResourceExhausted {
					t.Errorf("with QueueHealthCheck and the only worker busy, Check: %v; want RESOURCE_EXHAUSTED", err)
				}
			} else if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("with the only worker busy, Check = %v, %v; want SERVING (Stats %+v)", resp, err, q.Stats())
			}
			close(svc.release)
			if err := <-held; err != nil {
				t.Errorf("the holding call: %v", err)
			}
			if s := q.Stats(); name != "QueueHealthCheck" && (s.Admitted != 1 || s.Rejected != 0) {
				t.Errorf("Stats %+v: want only the holding call admitted, none rejected", s)
			}
		})
	}
}
