package hedgegrpc

import (
	"context"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// echoOnceBackend answers a bidi stream's first message, then ends the stream with an error.
type echoOnceBackend struct {
	testpb.UnimplementedTestServiceServer
}

func (echoOnceBackend) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	m, err := s.Recv()
	if err != nil {
		return err
	}
	if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
		return err
	}
	return status.Error(codes.Aborted, "done with this stream")
}

// A caller that goes on sending on a committed stream whose attempt can send no more (its
// server ended the stream) gets the send's error each time, and its messages are not kept:
// they were appended to the replay buffer, for nobody, one per call, for as long as it sent.
func TestSendAfterTheCommittedAttemptFailedKeepsNothing(t *testing.T) {
	checkLeaks(t)
	pc := hedge.Config{Trigger: hedge.After(time.Hour), Budget: budget.Config{Off: true}}
	hi := newInterceptor(t, Config{Policy: pc, Idempotent: []string{"/grpc.testing.TestService/"}})
	be := startTestService(t, echoOnceBackend{})
	cc := dial(t, hi, []*backend{be})

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := testpb.NewTestServiceClient(cc).FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := s.(*grpc.GenericClientStream[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse])
	if !ok {
		t.Fatalf("the generated stream is a %T", s)
	}
	cs := g.ClientStream
	rs, ok := cs.(*replayStream)
	if !ok {
		t.Fatalf("the stream is a %T, want the replaying stream", cs)
	}
	if err := cs.SendMsg(&testpb.StreamingOutputCallRequest{Payload: payload(0)}); err != nil {
		t.Fatal(err)
	}
	var first testpb.StreamingOutputCallResponse
	if err := cs.RecvMsg(&first); err != nil {
		t.Fatalf("first response: %v", err)
	}
	// The server has ended the stream: sends fail once the client has heard of it.
	var sendErr error
	for i := 1; i <= 1000 && sendErr == nil; i++ {
		sendErr = cs.SendMsg(&testpb.StreamingOutputCallRequest{Payload: payload(i)})
	}
	if sendErr == nil {
		t.Fatal("1000 sends after the server ended the stream all succeeded")
	}
	rs.mu.Lock()
	kept := len(rs.buf)
	rs.mu.Unlock()
	for i := range 100 {
		if err := cs.SendMsg(&testpb.StreamingOutputCallRequest{Payload: payload(i)}); err == nil {
			t.Fatalf("send %d after a failed send succeeded", i)
		}
	}
	rs.mu.Lock()
	n := len(rs.buf)
	rs.mu.Unlock()
	if n > kept {
		t.Errorf("the replay buffer holds %d messages after 100 failed sends, %d before: each was kept", n, kept)
	}
	var m testpb.StreamingOutputCallResponse
	if err := cs.RecvMsg(&m); status.Code(err) != codes.Aborted {
		t.Errorf("RecvMsg after the server's end: %v, want its ABORTED", err)
	}
}
