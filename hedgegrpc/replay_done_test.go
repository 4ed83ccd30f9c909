package hedgegrpc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// Once every attempt has failed, SendMsg still answers nil, for ever, and keeps every message.
func TestReplaySendAfterCallFailed(t *testing.T) {
	pol := hedge.Config{Trigger: hedge.After(time.Hour), Budget: budget.Config{Off: true}}
	hi := newInterceptor(t, Config{Policy: pol, Idempotent: []string{"/grpc.testing.TestService/"}, ReplayBuffer: 1000})
	sv := &replayTestServer{fail: func(int32) error { return status.Error(codes.InvalidArgument, "no") }}
	client := replayTestDial(t, hi, sv)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	st, err := client.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs := st.(*grpc.GenericClientStream[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]).ClientStream.(*replayStream)
	<-rs.done // the race has failed: INVALID_ARGUMENT is final
	t.Logf("race error: %v", rs.err)
	body := []byte(strings.Repeat("x", 1000))
	var sendErr error
	n := 0
	for ; n < 10000; n++ {
		if sendErr = st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: body}}); sendErr != nil {
			break
		}
	}
	rs.mu.Lock()
	kept, bytes := len(rs.buf), 0
	for _, m := range rs.buf {
		if m != nil {
			bytes += 1000
		}
	}
	rs.mu.Unlock()
	t.Logf("sends that returned nil after the failure: %d (last err %v); messages kept: %d (~%d KiB, limit 1000 B)", n, sendErr, kept, bytes>>10)
	if sendErr == nil {
		t.Fatalf("SendMsg kept answering nil on a dead call, buffering %d messages", kept)
	}
}
