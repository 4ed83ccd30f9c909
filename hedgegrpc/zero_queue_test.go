package hedgegrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
)

// A Queue written as a literal (&hedgegrpc.Queue{}, or a nil *Queue field left unset) fails at
// once with a message naming NewQueue, not on a nil pointer inside a call: gRPC does not
// recover a handler's panic, so that would end the server with a message that names
// nothing. RegisterOOB, which has an error to return, returns one; before, it registered a
// service whose every stream would have crashed the server.
func TestZeroQueueIsRefused(t *testing.T) {
	checkLeaks(t)
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	sinfo := &grpc.StreamServerInfo{FullMethod: "/grpc.testing.TestService/StreamingCall"}
	handler := func(context.Context, any) (any, error) { return "answer", nil }
	for name, q := range map[string]*Queue{"zero": {}, "nil": nil} {
		for what, use := range map[string]func(){
			"UnaryServer":   func() { q.UnaryServer(t.Context(), nil, info, handler) },
			"StreamServer":  func() { q.StreamServer(nil, nil, sinfo, func(any, grpc.ServerStream) error { return nil }) },
			"ServerOptions": func() { q.ServerOptions() },
			"Stats":         func() { q.Stats() },
		} {
			if x := queuePanic(use); !strings.Contains(fmt.Sprint(x), "NewQueue") {
				t.Errorf("%s Queue: %s panicked with %v, want a hedgegrpc: message naming NewQueue", name, what, x)
			}
		}
		srv := grpc.NewServer()
		err := q.RegisterOOB(srv, 0)
		srv.Stop()
		if !errors.Is(err, ErrQueueConfig) {
			t.Errorf("%s Queue: RegisterOOB returned %v, want an error wrapping ErrQueueConfig", name, err)
		}
	}
}

// queuePanic runs f and returns what it panicked with, or nil.
func queuePanic(f func()) (x any) {
	defer func() { x = recover() }()
	f()
	return nil
}
