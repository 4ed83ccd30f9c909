package hedgegrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// panicOf runs f and returns what it panicked with, or nil.
func panicOf(f func()) (x any) {
	defer func() { x = recover() }()
	f()
	return nil
}

// An Interceptor written as a literal (&hedgegrpc.Interceptor{}, by analogy with types whose
// zero value works) is refused with an error that names NewInterceptor, on a real connection,
// for unary and streaming calls alike, and by Reconfigure; DialOptions panics with a message.
// None of them dies on a nil pointer deep inside.
func TestZeroInterceptorIsRefused(t *testing.T) {
	checkLeaks(t)
	var zero Interceptor
	if x := panicOf(func() { zero.DialOptions() }); !strings.Contains(fmt.Sprint(x), "NewInterceptor") {
		t.Errorf("DialOptions on a zero Interceptor: panic %v, want a hedgegrpc: message naming NewInterceptor", x)
	}
	if err := zero.Reconfigure(hedge.Config{}, nil, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("Reconfigure on a zero Interceptor: %v, want an error wrapping ErrConfig", err)
	}

	be := &backend{
		check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return serving(), nil
		},
		watch: func(_ *backend, _ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
			return s.Send(serving())
		},
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, be)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	var hi Interceptor // installed by hand, without DialOptions
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(hi.UnaryClient), grpc.WithStreamInterceptor(hi.StreamClient))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := healthpb.NewHealthClient(cc)

	check := func(what string, call func() error) {
		t.Helper()
		var err error
		if x := panicOf(func() { err = call() }); x != nil {
			t.Errorf("%s through a zero Interceptor panicked: %v", what, x)
			return
		}
		if !errors.Is(err, ErrConfig) || status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "NewInterceptor") {
			t.Errorf("%s through a zero Interceptor: %v (code %v), want an error wrapping ErrConfig, INTERNAL, naming NewInterceptor", what, err, status.Code(err))
		}
	}
	check("a unary call", func() error {
		_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{})
		return err
	})
	check("a server stream", func() error {
		s, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	})
}
