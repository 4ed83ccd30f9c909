package hedgegrpc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// echoFiles builds, without protoc, the descriptor of a service hedgetest.Echo whose methods
// Get (NO_SIDE_EFFECTS), Put (IDEMPOTENT) and Post (no level) take and return a
// google.protobuf.StringValue.
func echoFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	method := func(name string, level *descriptorpb.MethodOptions_IdempotencyLevel) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{
			Name:       proto.String(name),
			InputType:  proto.String(".google.protobuf.StringValue"),
			OutputType: proto.String(".google.protobuf.StringValue"),
		}
		if level != nil {
			m.Options = &descriptorpb.MethodOptions{IdempotencyLevel: level}
		}
		return m
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("hedgegrpc/echo_test.proto"),
		Package:    proto.String("hedgetest"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Echo"),
			Method: []*descriptorpb.MethodDescriptorProto{
				method("Get", descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()),
				method("Put", descriptorpb.MethodOptions_IDEMPOTENT.Enum()),
				method("Post", nil),
			},
		}},
	}
	_ = wrapperspb.String // the dependency is registered by its generated package
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	return files
}

// echoCall is what the echo server's handlers share for the call in progress (one at a time).
type echoCall struct {
	calls      atomic.Int32
	arrived    chan struct{} // closed when the first attempt reaches the handler
	suppressed chan struct{} // closed when the client refused the call's hedge
}

// echoServer serves hedgetest.Echo. A first attempt waits until it is cancelled (it lost to
// a hedge) or its hedge was refused (it answers); a hedge echoes once its primary has arrived.
func echoServer(call *atomic.Pointer[echoCall]) *grpc.ServiceDesc {
	handler := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		c := call.Load()
		c.calls.Add(1)
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		wait := c.arrived
		if attemptOf(ctx) == 0 {
			close(c.arrived)
			wait = c.suppressed
		}
		select {
		case <-wait:
			return in, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second): // a bound, never reached when the test passes
			return nil, ctx.Err()
		}
	}
	return &grpc.ServiceDesc{
		ServiceName: "hedgetest.Echo",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Get", Handler: handler},
			{MethodName: "Put", Handler: handler},
			{MethodName: "Post", Handler: handler},
		},
	}
}

func TestIdempotencyLevelFromDescriptor(t *testing.T) {
	checkLeaks(t)
	var call atomic.Pointer[echoCall]
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	srv.RegisterService(echoServer(&call), nil)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	pc := hedgeNow()
	pc.Observer = func(e hedge.Event) {
		if e.Kind == hedge.HedgeSuppressed {
			close(call.Load().suppressed)
		}
	}
	hi := newInterceptor(t, Config{Policy: pc, Descriptors: echoFiles(t)})
	cc, err := grpc.NewClient("passthrough:///echo", append(hi.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })

	for _, tc := range []struct {
		method string
		sent   int32
	}{
		{"/hedgetest.Echo/Get", 2},  // NO_SIDE_EFFECTS: hedged
		{"/hedgetest.Echo/Put", 2},  // IDEMPOTENT: hedged
		{"/hedgetest.Echo/Post", 1}, // no level: sent once
	} {
		call.Store(&echoCall{arrived: make(chan struct{}), suppressed: make(chan struct{})})
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(t.Context(), tc.method, wrapperspb.String("hi"), out); err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if out.GetValue() != "hi" {
			t.Fatalf("%s: reply %q", tc.method, out.GetValue())
		}
		if n := call.Load().calls.Load(); n != tc.sent {
			t.Errorf("%s reached the server %d times, want %d", tc.method, n, tc.sent)
		}
	}
	if m := hi.Measured()["/hedgetest.Echo/Post"]; m.Suppressed[hedge.ReasonNotRepeatable] != 1 {
		t.Errorf("Post: suppressed %v, want one hedge refused as not repeatable", m.Suppressed)
	}
}
