package hedgegrpc

import (
	"context"
	"io"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// echoStreams serves the interop TestService's three streaming kinds plainly: what a call
// sends comes back, and each handler records the attempt index its metadata carried.
type echoStreams struct {
	testpb.UnimplementedTestServiceServer
	calls   atomic.Int32
	marked  atomic.Int32 // calls that carried an attempt mark of the interceptor's
	streams atomic.Int32
}

func (e *echoStreams) note(ctx context.Context) {
	e.calls.Add(1)
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(AttemptKey)) > 0 {
		e.marked.Add(1)
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("echo-header", "h"))
	grpc.SetTrailer(ctx, metadata.Pairs("echo-trailer", "t"))
}

func (e *echoStreams) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	e.note(s.Context())
	for i := range req.GetResponseParameters() {
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte(strconv.Itoa(i))}}); err != nil {
			return err
		}
	}
	return nil
}

func (e *echoStreams) StreamingInputCall(s grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	e.note(s.Context())
	n := 0
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return s.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
		}
		if err != nil {
			return err
		}
		n += len(m.GetPayload().GetBody())
	}
}

func (e *echoStreams) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	e.note(s.Context())
	return echoEach(s)
}

// Once MaxMethods methods have policies, server-streaming, client-streaming and bidi calls to
// other methods pass through whole, over a real server (bufconn) and the package's
// balancer: every message both ways, the end of each stream, headers and trailers
// (grpc.Header, grpc.Trailer) and OnFinish once, no attempt mark, and each call counted.
func TestMaxMethodsStreamsPassThrough(t *testing.T) {
	checkLeaks(t)
	es := &echoStreams{}
	be := &backend{
		check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return serving(), nil
		},
		register: func(s *grpc.Server) { testpb.RegisterTestServiceServer(s, es) },
	}
	hi := newInterceptor(t, Config{MaxMethods: 1, Policy: hedgeNow(), Idempotent: []string{"/grpc.testing.TestService/", "/grpc.health.v1.Health/"}})
	cc := startBufconn(t, hi, be)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err) // the one method with a policy
	}
	client := testpb.NewTestServiceClient(cc)
	const n = 5
	var finished atomic.Int32
	opts := func(h, tr *metadata.MD) []grpc.CallOption {
		return []grpc.CallOption{grpc.Header(h), grpc.Trailer(tr), grpc.OnFinish(func(error) { finished.Add(1) })}
	}
	checkMD := func(t *testing.T, h, tr metadata.MD) {
		t.Helper()
		if len(h.Get("echo-header")) != 1 || len(tr.Get("echo-trailer")) != 1 {
			t.Errorf("header %v, trailer %v: want the server's", h, tr)
		}
	}

	t.Run("server streaming", func(t *testing.T) {
		var h, tr metadata.MD
		params := make([]*testpb.ResponseParameters, n)
		for i := range params {
			params[i] = &testpb.ResponseParameters{}
		}
		s, err := client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: params}, opts(&h, &tr)...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			m, err := s.Recv()
			if err != nil || string(m.GetPayload().GetBody()) != strconv.Itoa(i) {
				t.Fatalf("message %d: %v, %v", i, m, err)
			}
		}
		if _, err := s.Recv(); err != io.EOF {
			t.Fatalf("after the last message: %v, want io.EOF", err)
		}
		checkMD(t, h, tr)
	})
	t.Run("client streaming", func(t *testing.T) {
		var h, tr metadata.MD
		s, err := client.StreamingInputCall(ctx, opts(&h, &tr)...)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := s.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("xy")}}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := s.CloseAndRecv()
		if err != nil || resp.GetAggregatedPayloadSize() != 2*n {
			t.Fatalf("CloseAndRecv: %v, %v; want %d bytes", resp, err, 2*n)
		}
		checkMD(t, h, tr)
	})
	t.Run("bidi", func(t *testing.T) {
		var h, tr metadata.MD
		s, err := client.FullDuplexCall(ctx, opts(&h, &tr)...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := s.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(strconv.Itoa(i))}}); err != nil {
				t.Fatal(err)
			}
			m, err := s.Recv()
			if err != nil || string(m.GetPayload().GetBody()) != strconv.Itoa(i) {
				t.Fatalf("echo %d: %v, %v", i, m, err)
			}
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != io.EOF {
			t.Fatalf("after CloseSend: %v, want io.EOF", err)
		}
		checkMD(t, h, tr)
	})
	if got := es.calls.Load(); got != 3 {
		t.Errorf("the server saw %d streams, want 3: one per call, none hedged", got)
	}
	if got := es.marked.Load(); got != 0 {
		t.Errorf("%d streams carried an attempt mark, want none", got)
	}
	if !waitFor(5*time.Second, func() bool { return finished.Load() == 3 }) {
		t.Errorf("OnFinish ran %d times, want 3 (once per call)", finished.Load())
	}
	if got := hi.OverMaxMethods(); got != 3 {
		t.Errorf("OverMaxMethods = %d, want 3", got)
	}
	if len(hi.Measured()) != 1 {
		t.Errorf("policies for %v, want Check's alone", hi.Measured())
	}
}
