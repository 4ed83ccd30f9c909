package hedgegrpc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// The call commits (the caller asked for headers, or its messages outgrew the buffer) just
// as its only attempt's stream fails: the commit takes the attempt still marked live. The
// attempt carries the call all the same, and its failure reaches the caller at once. Before,
// the failure went to the core, whose retries (each after its backoff, each spending budget)
// could only hand the same failure back, as copies of a committed call are never sent.
func TestCommitAsTheStreamFailsEndsTheCallAtOnce(t *testing.T) {
	pol := hedge.Config{Attempts: 3, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Initial: 200 * time.Millisecond, Maximum: 200 * time.Millisecond, Jitter: hedge.Off}}
	hi := newInterceptor(t, Config{Policy: pol, Idempotent: []string{"/grpc.testing.TestService/"}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// The commit waits for the caller's message to be kept: the server fails the stream as
	// it opens, and a Send after the commit to the failed attempt would rightly return
	// io.EOF (RecvMsg has the status), as a plain stream's does.
	sent := make(chan struct{})
	var once sync.Once
	hook := func(s *replayStream) {
		if s.i != hi {
			return // another test's call
		}
		once.Do(func() {
			select {
			case <-sent:
			case <-ctx.Done():
			}
			s.mu.Lock()
			s.commitEarlyLocked()
			s.mu.Unlock()
		})
	}
	testHookRecvFailed.Store(&hook)
	t.Cleanup(func() { testHookRecvFailed.Store(nil) })
	sv := failsFirstAttempt()
	client := testpb.NewTestServiceClient(dialTestService(t, hi, sv))
	st, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("small")}})
	close(sent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CloseAndRecv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("CloseAndRecv: %v, want the committed attempt's UNAVAILABLE", err)
	}
	if m := hi.Policy("/grpc.testing.TestService/StreamingInputCall").Measured(); m.Retries != 0 {
		t.Errorf("%d retries scheduled after the committed attempt failed, want none", m.Retries)
	}
	if n := sv.calls.Load(); n != 1 {
		t.Errorf("the server saw %d streams, want 1: no copy of a committed call is sent", n)
	}
}
