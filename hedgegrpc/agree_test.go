package hedgegrpc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// TestDriversAgree plays the agreement scenarios (hedgetest.Scenarios) through the unary
// interceptor and a real gRPC server over bufconn, inside a synctest bubble, on fake time:
// the interceptor must make the same decisions at the same moments as hedge.Do, the other
// integrations and the simulator. Then it checks what an interceptor further down the chain
// sees of its attempt, and that panics and runtime.Goexit there reach the caller as they do
// in hedge.Do.
func TestDriversAgree(t *testing.T) {
	hedgetest.TestDriver(t, bufconnDriver)
}

// valueKey is the trailer in which the scripted server sends an answer's Value.
const valueKey = "hedgetest-value"

// scriptedHealth is a health service that plays each call's answers, finding the attempt's
// index in its AttemptKey metadata.
type scriptedHealth struct {
	healthpb.UnimplementedHealthServer
	mu      sync.Mutex
	answers []hedgetest.Answer[string]
}

func (s *scriptedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	k := attemptOf(ctx)
	s.mu.Lock()
	a := hedgetest.Answer[string]{Stuck: true}
	if k < len(s.answers) {
		a = s.answers[k]
	}
	s.mu.Unlock()
	waited := time.Duration(0)
	if a.Starts && (a.Stuck || a.StartAfter <= a.After) {
		if !hedgetest.Sleep(ctx, a.StartAfter) {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		waited = a.StartAfter
		if wantsStartSignal(ctx) {
			grpc.SendHeader(ctx, startedHeader)
		}
	}
	if a.Stuck {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if !hedgetest.Sleep(ctx, a.After-waited) {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	switch {
	case a.Err == nil:
		grpc.SetTrailer(ctx, metadata.Pairs(valueKey, a.Value))
		return serving(), nil
	case hedge.Classify(a.Err).Class == hedge.Permanent:
		return nil, status.Error(codes.NotFound, a.Err.Error())
	}
	return nil, status.Error(codes.Unavailable, a.Err.Error())
}

// bufconnDriver is a hedgetest.Driver: the interceptor, with the start-signal stats
// handler, on a connection over bufconn to a server that plays each call's answers.
func bufconnDriver(t *testing.T, cfg hedge.Config, hook func(context.Context)) hedgetest.CallFunc {
	lis := bufconn.Listen(1 << 16)
	svc := &scriptedHealth{}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, svc)
	go srv.Serve(lis)
	hi, err := NewInterceptor(Config{Policy: cfg, Idempotent: []string{checkMethod}})
	if err != nil {
		t.Fatal(err)
	}
	interceptors := []grpc.UnaryClientInterceptor{hi.UnaryClient}
	if hook != nil {
		interceptors = append(interceptors, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			hook(ctx)
			return invoker(ctx, method, req, reply, cc, opts...)
		})
	}
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(interceptors...),
		grpc.WithStatsHandler(StatsHandler()),
		grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
	})
	client := healthpb.NewHealthClient(cc)
	return func(ctx context.Context, answers []hedgetest.Answer[string]) (string, error) {
		svc.mu.Lock()
		svc.answers = answers
		svc.mu.Unlock()
		var trailer metadata.MD
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
			return "", err
		}
		if v := trailer.Get(valueKey); len(v) > 0 {
			return v[0], nil
		}
		return "", nil
	}
}
