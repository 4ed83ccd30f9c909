package hedgegrpc

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// recvAll reads a stream to its end and returns its messages' statuses and its final error.
func recvAll(s grpc.ServerStreamingClient[healthpb.HealthCheckResponse]) ([]healthpb.HealthCheckResponse_ServingStatus, error) {
	var got []healthpb.HealthCheckResponse_ServingStatus
	for {
		m, err := s.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, m.Status)
	}
}

func TestServerStreamHedgedUntilFirstMessage(t *testing.T) {
	checkLeaks(t)
	// A first attempt never sends anything; a hedge sends three messages and ends, once the
	// first attempt has reached its backend: else, on a busy machine, the hedge can win
	// before the first attempt's stream is sent, and that attempt rightly never reaches a
	// handler to see its cancellation.
	primary := make(chan struct{})
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{watch: func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
			if attemptOf(s.Context()) == 0 {
				close(primary)
				<-s.Context().Done()
				return s.Context().Err()
			}
			select {
			case <-primary:
			case <-s.Context().Done():
				return s.Context().Err()
			}
			for _, st := range []healthpb.HealthCheckResponse_ServingStatus{1, 2, 1} {
				if err := s.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
					return err
				}
			}
			s.SetTrailer(metadata.Pairs("from", b.name))
			return nil
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{watchMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	var trailer metadata.MD
	s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if err != nil {
		t.Fatal(err)
	}
	got, err := recvAll(s)
	if err != io.EOF || len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 1 {
		t.Fatalf("received %v, %v; want [1 2 1] and io.EOF", got, err)
	}
	if from := trailer.Get("from"); len(from) != 1 || from[0] != s.Trailer().Get("from")[0] {
		t.Fatalf("trailer %v, want the winner's %v", trailer, s.Trailer())
	}
	if !waitFor(5*time.Second, func() bool { return bs[0].cancelled.Load()+bs[1].cancelled.Load() == 1 }) {
		t.Fatal("the losing stream's handler did not see its context cancelled")
	}
}

func TestServerStreamCommitPoint(t *testing.T) {
	checkLeaks(t)
	// No trigger, two attempts: a failure retries only before the first message.
	bs := startBackends(t, 1, func(int) *backend {
		return &backend{watch: func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
			switch {
			case req.Service == "empty":
				return nil
			case req.Service == "fail-first" && attemptOf(s.Context()) == 0:
				return status.Error(codes.Unavailable, "before the first message")
			}
			if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
				return err
			}
			if req.Service == "fail-after" {
				return status.Error(codes.Unavailable, "after the first message")
			}
			return nil
		}}
	})
	pc := hedge.Config{Attempts: 2, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: time.Microsecond}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{watchMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	for _, tc := range []struct {
		service  string
		messages int
		code     codes.Code
		attempts int32
	}{
		{"fail-first", 1, codes.OK, 2},
		{"fail-after", 1, codes.Unavailable, 1},
		{"empty", 0, codes.OK, 1},
	} {
		bs[0].calls.Store(0)
		s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{Service: tc.service})
		if err != nil {
			t.Fatal(err)
		}
		got, err := recvAll(s)
		code := status.Code(err)
		if err == io.EOF {
			code = codes.OK
		}
		if len(got) != tc.messages || code != tc.code {
			t.Errorf("%s: %d messages, %v; want %d, %v", tc.service, len(got), err, tc.messages, tc.code)
		}
		if n := bs[0].calls.Load(); n != tc.attempts {
			t.Errorf("%s: %d attempts, want %d", tc.service, n, tc.attempts)
		}
	}

	// Asking for the headers before the first message: one unhedged stream.
	s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Header(); err != nil {
		t.Fatal(err)
	}
	if got, err := recvAll(s); len(got) != 1 || err != io.EOF {
		t.Fatalf("after Header: %v, %v", got, err)
	}
}

// Client- and bidi-streaming calls reach the next streamer unchanged.
// Client-streaming and bidi calls of a method not safe to repeat pass through.
func TestStreamPassThrough(t *testing.T) {
	hi := newInterceptor(t, Config{Policy: hedgeNow()})
	for _, desc := range []*grpc.StreamDesc{{ClientStreams: true}, {ClientStreams: true, ServerStreams: true}} {
		called := false
		_, err := hi.StreamClient(t.Context(), desc, nil, "/a.S/M", func(ctx context.Context, d *grpc.StreamDesc, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			called = d == desc && method == "/a.S/M"
			return nil, nil
		})
		if err != nil || !called {
			t.Fatalf("%+v: not passed through (%v)", desc, err)
		}
	}
}

// A server-streaming call through the Queue's stream interceptor and the stream start signal:
// the worker is held for the stream's life, and the client hears the start of its attempt.
func TestStreamQueueAndStartSignal(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 1, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	be := &backend{register: func(srv *grpc.Server) {
		testpb.RegisterTestServiceServer(srv, heldStream{q: q})
	}}
	const method = "/grpc.testing.TestService/StreamingOutputCall"
	started := make(chan int, 2)
	hi := newInterceptor(t, Config{Idempotent: []string{method}})
	cc := startBufconnWith(t, hi, be, []grpc.DialOption{grpc.WithStatsHandler(startSignal{report: func(ctx context.Context) {
		started <- attemptIndex(ctx)
	}})}, grpc.ChainStreamInterceptor(q.StreamServer, StreamStartSignal))
	ask := metadata.AppendToOutgoingContext(t.Context(), StartSignalKey, "1")
	s, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(ask, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got int
	for {
		if _, err = s.Recv(); err != nil {
			break
		}
		got++
	}
	if got != 1 || err != io.EOF {
		t.Fatalf("received %d messages, then %v; want one message and io.EOF", got, err)
	}
	if k := <-started; k != 0 {
		t.Fatalf("start signal for attempt %d, want 0", k)
	}
	if !waitFor(10*time.Second, func() bool { st := q.Stats(); return st.Running == 0 && st.Admitted == 1 }) {
		t.Fatalf("queue stats %+v, want one stream admitted and its worker released", q.Stats())
	}
}

// heldStream answers a server-streaming call with one message, and with an error when the
// stream runs without a worker of q's.
type heldStream struct {
	testpb.UnimplementedTestServiceServer
	q *Queue
}

func (h heldStream) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if h.q.Stats().Running != 1 {
		return status.Error(codes.Internal, "the stream runs without a worker")
	}
	return s.Send(&testpb.StreamingOutputCallResponse{})
}
