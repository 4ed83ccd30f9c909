package hedgegrpc

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A call whose client has gone before its handler starts (a hedge's loser cancelled as it
// reached the server, or as it got its worker) is not served: not by a free worker of the
// Queue, and not past StartSignal, whose header finds nobody to go to.
func TestGoneCallDoesNotRunItsHandler(t *testing.T) {
	q, err := NewQueue(QueueConfig{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(metadata.NewIncomingContext(context.Background(), metadata.Pairs(StartSignalKey, "1")))
	cancel()
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	ran := 0
	handler := func(context.Context, any) (any, error) { ran++; return "answer", nil }
	for name, serve := range map[string]grpc.UnaryServerInterceptor{"Queue": q.UnaryServer, "StartSignal": StartSignal} {
		ran = 0
		if _, err := serve(ctx, nil, info, handler); status.Code(err) != codes.Canceled || ran != 0 {
			t.Errorf("%s: %v with the handler run %d times, want CANCELLED and no run", name, err, ran)
		}
	}
	if s := q.Stats(); s.Abandoned != 1 || s.Admitted != 0 || s.Running != 0 {
		t.Errorf("Queue stats = %+v, want the call abandoned and nothing running", s)
	}
	ran = 0
	live := metadata.NewIncomingContext(context.Background(), metadata.Pairs(StartSignalKey, "1"))
	if _, err := StartSignal(live, nil, info, handler); err != nil || ran != 1 {
		t.Errorf("StartSignal of a live call (no stream to send on, but nobody gone): %v, run %d times, want the handler run", err, ran)
	}
}
