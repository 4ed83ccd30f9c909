package hedgegrpc

import (
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

func dialTestService(t *testing.T, hi *Interceptor, impl testpb.TestServiceServer) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, impl)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// A long-lived bidi stream, committed at its first response, lets go of every message the
// attempt it is committed to has sent (no other attempt will send them again): its memory
// does not grow with the stream's length.
func TestCommittedStreamLetsGoOfSentMessages(t *testing.T) {
	checkLeaks(t)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Budget: budget.Config{Off: true}}, Idempotent: []string{"/grpc.testing.TestService/"}})
	cc := dialTestService(t, hi, &headerFirstBackend{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := cc.NewStream(ctx, streamDescOf("FullDuplexCall"), duplexMethod)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := cs.(*replayStream)
	if !ok {
		t.Fatalf("stream is %T, not hedged", cs)
	}
	const n = 2000
	for i := range n {
		if err := cs.SendMsg(&testpb.StreamingOutputCallRequest{Payload: payload(i)}); err != nil {
			t.Fatal(err)
		}
		var m testpb.StreamingOutputCallResponse
		if err := cs.RecvMsg(&m); err != nil {
			t.Fatal(err)
		}
	}
	rs.mu.Lock()
	l, c, first := len(rs.buf), cap(rs.buf), rs.off == 0 && len(rs.buf) > 0
	rs.mu.Unlock()
	cs.CloseSend()
	for {
		var m testpb.StreamingOutputCallResponse
		if err := cs.RecvMsg(&m); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	t.Logf("after %d messages past the commit: len(buf)=%d cap=%d, message 0 still held: %v", n, l, c, first)
	if l > 64 || first {
		t.Errorf("committed stream retains %d buffer slots (cap %d) after %d messages; first message still referenced=%v: the buffer is never released after the commit", l, c, n, first)
	}
}

// After the buffer overflows while no attempt runs (the retry waits out its backoff), SendMsg
// waits for the attempt that takes the commit, as a plain stream's waits for flow control:
// returning at once, it would keep every message, and ReplayBuffer would bound nothing.
func TestReplayBufferBoundsSendsDuringBackoff(t *testing.T) {
	checkLeaks(t)
	pol := hedge.Config{Attempts: 2, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Initial: 2 * time.Second, Maximum: 2 * time.Second, Jitter: hedge.Off}}
	const limit = 1024
	hi := newInterceptor(t, Config{Policy: pol, Idempotent: []string{"/grpc.testing.TestService/"}, ReplayBuffer: limit})
	sv := failsFirstAttempt()
	cc := dialTestService(t, hi, sv)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := cc.NewStream(ctx, streamDescOf("StreamingInputCall"), inputMethod)
	if err != nil {
		t.Fatal(err)
	}
	rs := cs.(*replayStream)
	// Wait until attempt 0 has failed (its context is done).
	if !waitFor(5*time.Second, func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return len(rs.running) == 1 && rs.running[0].ctx.Err() != nil
	}) {
		t.Fatal("attempt 0 did not fail")
	}
	body := []byte(strings.Repeat("x", 1000))
	start := time.Now()
	const n = 500
	for range n {
		if err := cs.SendMsg(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: body}}); err != nil {
			t.Fatal(err)
		}
	}
	el := time.Since(start)
	rs.mu.Lock()
	held := 0
	for _, m := range rs.buf {
		if m != nil {
			held += 1000
		}
	}
	rs.mu.Unlock()
	cancel()
	cs.RecvMsg(new(testpb.StreamingInputCallResponse))
	t.Logf("%d sends of 1000 B took %v; ~%d bytes held with ReplayBuffer=%d", n, el, held, limit)
	if held > 4*limit {
		t.Errorf("%d bytes buffered with ReplayBuffer=%d: SendMsg does not block once committed with no attempt running", held, limit)
	}
}

func streamDescOf(name string) *grpc.StreamDesc {
	for i := range testpb.TestService_ServiceDesc.Streams {
		if d := &testpb.TestService_ServiceDesc.Streams[i]; d.StreamName == name {
			return d
		}
	}
	panic(name)
}

// slowFirstEcho: attempt 0 reads and never answers; a copy echoes every message.
type slowFirstEcho struct {
	testpb.UnimplementedTestServiceServer
	mu  sync.Mutex
	got []int // lengths the copy received
}

func (e *slowFirstEcho) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	first := attemptOf(s.Context()) == 0
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if first {
			continue
		}
		e.mu.Lock()
		e.got = append(e.got, len(m.GetPayload().GetBody()))
		e.mu.Unlock()
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// The buffer overflows while a hedge's first response is on its way to the core: the call
// commits early to the hedge, the attempt that answered and that the core will pick, not to
// the earliest running one (0). Committed to 0, 0's sender would carry the messages alone and
// let go of them, and the hedge, the winner, would never send them nor any sent later, its
// caller's SendMsg blocked even after its context ended.
func TestEarlyCommitGoesToTheAttemptThatAnswered(t *testing.T) {
	checkLeaks(t)
	for iter := range 5 {
		var once sync.Once
		blocked, proceed := make(chan struct{}), make(chan struct{})
		pc := hedge.Config{Trigger: hedge.After(time.Millisecond), Budget: budget.Config{Off: true}}
		hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{"/grpc.testing.TestService/"}, ReplayBuffer: 100,
			Observer: func(method string, e hedge.Event) {
				if method == duplexMethod && e.Kind == hedge.AttemptFinished && e.Attempt == 1 && e.Err == nil {
					once.Do(func() {
						close(blocked)
						select {
						case <-proceed:
						case <-time.After(5 * time.Second):
						}
					})
				}
			}})
		be := &slowFirstEcho{}
		cc := dialTestService(t, hi, be)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		cs, err := cc.NewStream(ctx, streamDescOf("FullDuplexCall"), duplexMethod)
		if err != nil {
			t.Fatal(err)
		}
		rs := cs.(*replayStream)
		send := func(n int) error {
			return cs.SendMsg(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(strings.Repeat("x", n))}})
		}
		if err := send(10); err != nil {
			t.Fatal(err)
		}
		select {
		case <-blocked:
		case <-ctx.Done():
			t.Fatal("hedge never answered")
		}
		if err := send(200); err != nil { // overflows: commits early, to the hedge that answered
			t.Fatal(err)
		}
		close(proceed)
		<-rs.done
		var winnerIs1 bool
		if rs.winner != nil { // set before done was closed
			info, _ := hedge.AttemptFrom(rs.winner.ctx)
			winnerIs1 = info.Index == 1
		}
		if !winnerIs1 {
			cancel()
			cs.RecvMsg(new(testpb.StreamingOutputCallResponse))
			t.Fatalf("iteration %d: the winner is not the hedge, which answered before the commit", iter)
		}
		done := make(chan error, 1)
		var echoed []int // written before done is sent
		go func() {
			for range 3 {
				var m testpb.StreamingOutputCallResponse
				if err := cs.RecvMsg(&m); err != nil {
					done <- err
					return
				}
				echoed = append(echoed, len(m.GetPayload().GetBody()))
			}
			done <- nil
		}()
		sendErr := make(chan error, 1)
		go func() { sendErr <- send(30) }()
		var rerr error
		timedOut := false
		select {
		case rerr = <-done:
		case <-time.After(3 * time.Second):
			rerr, timedOut = context.DeadlineExceeded, true
		}
		be.mu.Lock()
		got := append([]int(nil), be.got...)
		be.mu.Unlock()
		cancel()
		select {
		case <-sendErr:
		case <-time.After(2 * time.Second):
			t.Fatalf("iteration %d: winner (the hedge) received %v of [10 200 30]; SendMsg still blocked 2s after the caller's context was cancelled (reading echoes: %v)", iter, got, rerr)
		}
		if timedOut {
			<-done
		}
		if rerr != nil {
			t.Fatalf("iteration %d: winner (the hedge) received %v of [10 200 30]; reading its 3 echoes: %v", iter, got, rerr)
		}
		if !slices.Equal(echoed, []int{10, 200, 30}) {
			t.Fatalf("iteration %d: the winner echoed messages of %v bytes, want [10 200 30]", iter, echoed)
		}
	}
}
