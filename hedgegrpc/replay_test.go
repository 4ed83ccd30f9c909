package hedgegrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

const (
	inputMethod  = "/grpc.testing.TestService/StreamingInputCall"
	duplexMethod = "/grpc.testing.TestService/FullDuplexCall"
)

// streamBackend serves grpc's interop TestService's client-streaming and bidi calls: a first
// attempt reads what it is sent and never answers (a slow backend); a copy reads every message
// and answers with them, in the order it received them.
type streamBackend struct {
	testpb.UnimplementedTestServiceServer
	arrived chan struct{} // closed when a copy reaches a backend
	// firstIn, when set, is closed when a first attempt reaches a backend, and a copy reads
	// nothing until then: else, on a busy machine, a copy could win before the first attempt
	// was sent, and the first attempt, rightly never sent, would not reach a backend at all.
	firstIn chan struct{}
	release chan struct{} // closed to let first attempts answer; nil: they never do
	once    sync.Once
	inOnce  sync.Once
	copies  atomic.Int32
	firsts  atomic.Int32
	mu      sync.Mutex
	got     []string // what the copy received
}

func (sb *streamBackend) StreamingInputCall(s grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	bodies, err := sb.read(s.Context(), func() ([]byte, error) {
		m, err := s.Recv()
		return m.GetPayload().GetBody(), err
	})
	if err != nil {
		return err
	}
	n := 0
	for _, b := range bodies {
		n += len(b)
	}
	return s.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(n)})
}

func (sb *streamBackend) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	bodies, err := sb.read(s.Context(), func() ([]byte, error) {
		m, err := s.Recv()
		return m.GetPayload().GetBody(), err
	})
	if err != nil {
		return err
	}
	for _, b := range bodies {
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: b}}); err != nil {
			return err
		}
	}
	return nil
}

// read receives a call's messages to the end. A first attempt then waits to be cancelled.
func (sb *streamBackend) read(ctx context.Context, recv func() ([]byte, error)) ([][]byte, error) {
	first := attemptOf(ctx) == 0
	if first {
		sb.firsts.Add(1)
		if sb.firstIn != nil {
			sb.inOnce.Do(func() { close(sb.firstIn) })
		}
	} else {
		if sb.firstIn != nil {
			select {
			case <-sb.firstIn:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		sb.copies.Add(1)
		sb.once.Do(func() { close(sb.arrived) })
	}
	var bodies [][]byte
	for {
		b, err := recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	if first {
		select {
		case <-sb.release: // nil: never
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	sb.mu.Lock()
	for _, b := range bodies {
		sb.got = append(sb.got, string(b))
	}
	sb.mu.Unlock()
	return bodies, nil
}

// startStreamBackends starts two loopback servers with the health service (for dial's warm-up)
// and the TestService, and dials them through hi.
func startStreamBackends(t *testing.T, hi *Interceptor, sb *streamBackend) testpb.TestServiceClient {
	t.Helper()
	var bs []*backend
	for i := range 2 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		be := &backend{name: "backend" + strconv.Itoa(i), addr: lis.Addr().String()}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, be)
		testpb.RegisterTestServiceServer(srv, sb)
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		bs = append(bs, be)
	}
	return testpb.NewTestServiceClient(dial(t, hi, bs))
}

func payload(i int) *testpb.Payload {
	return &testpb.Payload{Body: []byte("message-" + strconv.Itoa(i))}
}

// A client-streaming call and a bidi call whose first backend is slow are won by a copy on the
// other backend, which receives every message, those sent before it started (replayed) and
// those after, in order.
func TestClientAndBidiStreamsHedgedWithReplay(t *testing.T) {
	checkLeaks(t)
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{"/grpc.testing.TestService/"}})
	want := []string{"message-0", "message-1", "message-2", "message-3", "message-4"}
	check := func(t *testing.T, sb *streamBackend) {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		if len(sb.got) != len(want) {
			t.Fatalf("the copy received %q, want %q", sb.got, want)
		}
		for i := range want {
			if sb.got[i] != want[i] {
				t.Fatalf("the copy received %q, want %q", sb.got, want)
			}
		}
		if sb.firsts.Load() != 1 || sb.copies.Load() != 1 {
			t.Fatalf("%d first attempts and %d copies, want one of each", sb.firsts.Load(), sb.copies.Load())
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	t.Run("client streaming", func(t *testing.T) {
		sb := &streamBackend{arrived: make(chan struct{}), firstIn: make(chan struct{})}
		client := startStreamBackends(t, hi, sb)
		var finished atomic.Int32
		s, err := client.StreamingInputCall(ctx, grpc.OnFinish(func(err error) {
			if err == nil {
				finished.Add(1)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := s.Send(&testpb.StreamingInputCallRequest{Payload: payload(i)}); err != nil {
				t.Fatal(err)
			}
		}
		<-sb.arrived // the copy has started: the rest reaches it live
		for i := 3; i < 5; i++ {
			if err := s.Send(&testpb.StreamingInputCallRequest{Payload: payload(i)}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := s.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.AggregatedPayloadSize != 45 {
			t.Fatalf("aggregated size %d, want 45", resp.AggregatedPayloadSize)
		}
		if finished.Load() != 1 {
			t.Fatalf("OnFinish ran %d times with nil, want once", finished.Load())
		}
		check(t, sb)
	})
	t.Run("bidi", func(t *testing.T) {
		sb := &streamBackend{arrived: make(chan struct{}), firstIn: make(chan struct{})}
		client := startStreamBackends(t, hi, sb)
		s, err := client.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := s.Send(&testpb.StreamingOutputCallRequest{Payload: payload(i)}); err != nil {
				t.Fatal(err)
			}
		}
		<-sb.arrived
		for i := 3; i < 5; i++ {
			if err := s.Send(&testpb.StreamingOutputCallRequest{Payload: payload(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(m.GetPayload().GetBody()))
		}
		if len(got) != 5 || got[0] != want[0] || got[4] != want[4] {
			t.Fatalf("responses %q, want %q", got, want)
		}
		check(t, sb)
	})
}

// A call whose messages outgrow the replay buffer before its hedge is due is committed to its
// first attempt and never hedged, however slow that attempt is: its first attempt answers only
// once the call was decided (committed) or a copy arrived (the hedge fired: the test fails).
func TestStreamPastBufferNeverHedged(t *testing.T) {
	checkLeaks(t)
	decided := make(chan struct{})
	var once sync.Once
	pc := hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Off: true}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{"/grpc.testing.TestService/"}, ReplayBuffer: 20,
		Observer: func(method string, e hedge.Event) {
			if method == inputMethod && e.Kind == hedge.CallFinished {
				once.Do(func() { close(decided) })
			}
		}})
	sb := &streamBackend{arrived: make(chan struct{}), release: make(chan struct{})}
	client := startStreamBackends(t, hi, sb)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // 12 bytes each: the second overflows the 20-byte buffer
		if err := s.Send(&testpb.StreamingInputCallRequest{Payload: payload(i)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-decided:
	case <-sb.arrived:
	case <-ctx.Done():
		t.Fatal("the call was neither committed nor hedged")
	}
	close(sb.release)
	resp, err := s.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.AggregatedPayloadSize != 45 || sb.firsts.Load() != 1 || sb.copies.Load() != 0 {
		t.Fatalf("size %d, %d first attempts, %d copies; want 45 from the first attempt alone", resp.AggregatedPayloadSize, sb.firsts.Load(), sb.copies.Load())
	}
	if n := hi.Policy(inputMethod).Measured().HedgesStarted; n != 0 {
		t.Fatalf("%d hedges, want none past the buffer", n)
	}
}

// headerFirstBackend answers a bidi call as servers that greet their clients do: it sends
// its headers at once, naming the attempt it serves, then echoes each message it receives.
type headerFirstBackend struct {
	testpb.UnimplementedTestServiceServer
}

func (hb *headerFirstBackend) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	if err := s.SendHeader(metadata.Pairs("attempt", strconv.Itoa(attemptOf(s.Context())))); err != nil {
		return err
	}
	return echoEach(s)
}

// A bidi caller that reads the server's headers before it sends anything gets them: Header
// commits the call to a running attempt instead of waiting for a response message that the
// server sends only once it has been sent something. The stream then carries the call alone.
func TestBidiHeaderBeforeSendCommits(t *testing.T) {
	checkLeaks(t)
	hb := &headerFirstBackend{}
	pc := hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Off: true}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{"/grpc.testing.TestService/"}})
	be := startTestService(t, hb)
	client := testpb.NewTestServiceClient(dial(t, hi, []*backend{be}))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := client.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md, err := s.Header()
	if err != nil {
		t.Fatalf("Header: %v (it waited for a response the server sends only after a message)", err)
	}
	if got := md.Get("attempt"); len(got) != 1 || got[0] != "0" {
		t.Fatalf("headers %v, want the first attempt's, the earliest running", md)
	}
	for i := range 3 {
		if err := s.Send(&testpb.StreamingOutputCallRequest{Payload: payload(i)}); err != nil {
			t.Fatal(err)
		}
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(m.GetPayload().GetBody()), "message-"+strconv.Itoa(i); got != want {
			t.Fatalf("echo %d = %q, want %q", i, got, want)
		}
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
	// Committed at Header to the first attempt: a copy started before it lost.
	if m := hi.Policy(duplexMethod).Measured(); m.Calls != 1 || m.HedgesWon != 0 {
		t.Errorf("Measured = %d calls, %d hedges won; want one call won by its first attempt", m.Calls, m.HedgesWon)
	}
}

// startTestService serves svc (and the health service the warm-up calls) on a loopback
// listener of its own, stopped at the test's end, as backend0.
func startTestService(t *testing.T, svc testpb.TestServiceServer) *backend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be := &backend{name: "backend0", addr: lis.Addr().String()}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, be)
	testpb.RegisterTestServiceServer(srv, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return be
}

// echoEach sends back each message of a bidi stream until its client closes it.
func echoEach(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}
