package hedgegrpc

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// chunkFiles builds, without protoc and without registering a Go type, a service
// hedgetest.Chunks whose client-streaming method Join (NO_SIDE_EFFECTS) takes messages
// hedgetest.Chunk{text} and answers one with their texts joined: what a proxy or a tool that
// loads descriptor sets at run time has.
func chunkFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("hedgegrpc/chunks_test.proto"),
		Package: proto.String("hedgetest"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Chunk"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name:     proto.String("text"),
				Number:   proto.Int32(1),
				Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				JsonName: proto.String("text"),
			}},
		}},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Chunks"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:            proto.String("Join"),
				InputType:       proto.String(".hedgetest.Chunk"),
				OutputType:      proto.String(".hedgetest.Chunk"),
				ClientStreaming: proto.Bool(true),
				Options:         &descriptorpb.MethodOptions{IdempotencyLevel: descriptorpb.MethodOptions_NO_SIDE_EFFECTS.Enum()},
			}},
		}},
	}
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

// chunksServer serves hedgetest.Chunks with dynamic messages of chunk. A first attempt reads
// its messages and then waits to be cancelled (a slow backend); a copy answers.
func chunksServer(chunk protoreflect.MessageDescriptor, copies *atomic.Int32) *grpc.ServiceDesc {
	text := chunk.Fields().ByName("text")
	join := func(_ any, s grpc.ServerStream) error {
		joined := ""
		for {
			in := dynamicpb.NewMessage(chunk)
			err := s.RecvMsg(in)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			joined += in.Get(text).String()
		}
		if attemptOf(s.Context()) == 0 {
			select {
			case <-s.Context().Done():
				return s.Context().Err()
			case <-time.After(10 * time.Second): // a bound, never reached when the test passes
				return nil
			}
		}
		copies.Add(1)
		out := dynamicpb.NewMessage(chunk)
		out.Set(text, protoreflect.ValueOfString(joined))
		return s.SendMsg(out)
	}
	return &grpc.ServiceDesc{
		ServiceName: "hedgetest.Chunks",
		HandlerType: (*any)(nil),
		Streams:     []grpc.StreamDesc{{StreamName: "Join", Handler: join, ClientStreams: true}},
	}
}

// A client-streaming call whose descriptor comes from Config.Descriptors, with no Go type
// registered for its messages, is hedged all the same: its first response is decoded as a
// dynamic message and handed to the caller's message, of the resolver's descriptor or of
// another one of the same name.
func TestStreamOfDescriptorWithoutRegisteredType(t *testing.T) {
	checkLeaks(t)
	files := chunkFiles(t)
	d, err := files.FindDescriptorByName("hedgetest.Chunk")
	if err != nil {
		t.Fatal(err)
	}
	chunk := d.(protoreflect.MessageDescriptor)
	var copies atomic.Int32
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	srv.RegisterService(chunksServer(chunk, &copies), nil)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	hi := newInterceptor(t, Config{Policy: hedgeNow(), Descriptors: files})
	cc, err := grpc.NewClient("passthrough:///chunks", append(hi.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })

	// The same message built a second time: a descriptor of the same name, not the same one.
	again, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(chunk.ParentFile()), protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		recv protoreflect.MessageDescriptor
	}{
		{"the resolver's descriptor", chunk},
		{"another descriptor of the name", again.Messages().ByName("Chunk")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := copies.Load()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			s, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, "/hedgetest.Chunks/Join")
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range []string{"a", "b", "c"} {
				m := dynamicpb.NewMessage(chunk)
				m.Set(chunk.Fields().ByName("text"), protoreflect.ValueOfString(part))
				if err := s.SendMsg(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatal(err)
			}
			out := dynamicpb.NewMessage(tc.recv)
			if err := s.RecvMsg(out); err != nil {
				t.Fatalf("RecvMsg: %v (a stream left unhedged waits on its slow first attempt)", err)
			}
			if got := out.Get(tc.recv.Fields().ByName("text")).String(); got != "abc" {
				t.Errorf("response text %q, want %q", got, "abc")
			}
			if n := copies.Load() - before; n != 1 {
				t.Errorf("%d copies answered, want the one hedge", n)
			}
			if err := s.RecvMsg(dynamicpb.NewMessage(tc.recv)); err != io.EOF {
				t.Errorf("second RecvMsg: %v, want io.EOF", err)
			}
		})
	}
}
