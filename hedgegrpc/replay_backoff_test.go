package hedgegrpc

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// replayTestServer: attempt 0 of a client-streaming call fails UNAVAILABLE at once; later attempts
// read everything and answer with the total size.
type replayTestServer struct {
	testpb.UnimplementedTestServiceServer
	calls atomic.Int32
	fail  func(n int32) error
}

func (s *replayTestServer) StreamingInputCall(st grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	n := s.calls.Add(1)
	if err := s.fail(n); err != nil {
		return err
	}
	total := 0
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		total += len(m.GetPayload().GetBody())
	}
	return st.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
}

// failsFirstAttempt is a server whose first stream fails UNAVAILABLE (retriable) and whose
// later ones succeed.
func failsFirstAttempt() *replayTestServer {
	return &replayTestServer{fail: func(n int32) error {
		if n == 1 {
			return status.Error(codes.Unavailable, "first attempt fails")
		}
		return nil
	}}
}

func replayTestDial(t *testing.T, hi *Interceptor, srvImpl testpb.TestServiceServer) testpb.TestServiceClient {
	t.Helper()
	return testpb.NewTestServiceClient(dialTestService(t, hi, srvImpl))
}

// The first attempt fails (UNAVAILABLE, retriable); while the retry waits out its backoff,
// the caller's messages outgrow the replay buffer. The call commits to the dead attempt 0,
// and the retry waits for s.lost, which nothing will ever close.
func TestReplayOverflowDuringBackoff(t *testing.T) {
	// The test's Send must land while the retry waits out its backoff: the policy says when
	// that wait begins (RetryScheduled), rather than a sleep guessing it.
	scheduled := make(chan struct{})
	var once sync.Once
	pol := hedge.Config{Attempts: 2, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Initial: 300 * time.Millisecond, Maximum: 300 * time.Millisecond, Jitter: hedge.Off},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.RetryScheduled {
				once.Do(func() { close(scheduled) })
			}
		}}
	hi := newInterceptor(t, Config{Policy: pol, Idempotent: []string{"/grpc.testing.TestService/"}, ReplayBuffer: 100})
	sv := failsFirstAttempt()
	client := replayTestDial(t, hi, sv)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	st, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("small")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-scheduled: // attempt 0 has failed; the retry waits 300ms
	case <-time.After(2 * time.Second):
		t.Fatalf("attempt 0's failure scheduled no retry (server calls: %d)", sv.calls.Load())
	}
	if n := sv.calls.Load(); n != 1 {
		t.Fatalf("%d server calls before the retry's backoff ended, want 1", n)
	}
	if err := st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte(strings.Repeat("x", 200))}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := st.CloseAndRecv()
	t.Logf("CloseAndRecv after %v: resp=%v err=%v server calls=%d", time.Since(start).Round(time.Millisecond), resp, err, sv.calls.Load())
	if err != nil {
		t.Fatalf("want the retry to carry the call (205 bytes), got %v", err)
	}
}
