package main

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The gRPC servers and client: the same model as the HTTP ones (server.go), over gRPC. A call
// is one unary method, grpcMethod, whose request carries the call's index (a
// wrapperspb.UInt64Value) and whose answer is empty; the attempt's index comes in
// hedgegrpc.AttemptKey metadata. Each server is a hedgegrpc.Queue of W workers in front of a
// handler that holds its worker for the drawn service time, and the client hedges through
// hedgegrpc's DialOptions, everything they install included.

// GRPC is the -protocol value of the gRPC servers and client.
const GRPC = "grpc"

// grpcService and grpcMethod name the load test's one method.
const (
	grpcService = "hedgeload.Load"
	grpcMethod  = "/" + grpcService + "/Call"
)

// grpcIDs reads a gRPC request's call index and attempt index.
func grpcIDs(ctx context.Context, req *wrapperspb.UInt64Value) (call, attempt int, ok bool) {
	call = int(req.GetValue())
	if v := metadata.ValueFromIncomingContext(ctx, hedgegrpc.AttemptKey); len(v) > 0 {
		if _, err := fmt.Sscan(v[0], &attempt); err != nil || attempt < 0 || attempt >= maxAttempts {
			return 0, 0, false
		}
	}
	return call, attempt, call >= 0
}

// grpcServiceDesc is the load test's service: no generated code, one unary method whose
// handler is h.
func grpcServiceDesc(h func(ctx context.Context, req *wrapperspb.UInt64Value) (*emptypb.Empty, error)) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: grpcService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Call",
			Handler: func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
				req := new(wrapperspb.UInt64Value)
				if err := dec(req); err != nil {
					return nil, err
				}
				call := func(ctx context.Context, r any) (any, error) { return h(ctx, r.(*wrapperspb.UInt64Value)) }
				if in == nil {
					return call(ctx, req)
				}
				return in(ctx, req, &grpc.UnaryServerInfo{FullMethod: grpcMethod}, call)
			},
		}},
		Metadata: "hedgeload",
	}
}

// startGRPCReplica starts one gRPC server on a fresh loopback port: the queue, then the
// handler, as startReplica's HTTP server.
func startGRPCReplica(cfg serverConfig, acct *accounts) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	q, err := hedgegrpc.NewQueue(hedgegrpc.QueueConfig{Workers: cfg.workers, Queue: cfg.maxQueue})
	if err != nil {
		ln.Close()
		return nil, err
	}
	var waited atomic.Int64 // ns the admitted calls waited for a worker
	life := newReplicaLife()
	type arrivedKey struct{}
	// arrive counts a measured call's attempt and, in "ignored" mode, keeps the client's
	// cancellation from the queue and the handler, as the HTTP server does.
	arrive := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*wrapperspb.UInt64Value); ok {
			if call, attempt, ok := grpcIDs(ctx, r); ok {
				acct.arrive(call, attempt)
			}
		}
		if !cfg.reaches {
			// The replica's stop still reaches them (replicaLife).
			var cancel context.CancelFunc
			ctx, cancel = life.detach(ctx)
			defer cancel()
		}
		return next(context.WithValue(ctx, arrivedKey{}, time.Now()), req)
	}
	h := func(ctx context.Context, req *wrapperspb.UInt64Value) (*emptypb.Empty, error) {
		now := time.Now()
		if at, ok := ctx.Value(arrivedKey{}).(time.Time); ok {
			waited.Add(int64(now.Sub(at)))
		}
		call, attempt, ok := grpcIDs(ctx, req)
		if !ok || call*maxAttempts+attempt >= len(acct.served) {
			return nil, status.Error(codes.InvalidArgument, "hedgeload: bad call or attempt")
		}
		acct.busyDelta(now, 1)
		defer func() { acct.busyDelta(time.Now(), -1) }()
		hold(ctx, cfg, acct, call, attempt)
		return new(emptypb.Empty), nil
	}
	// Stop waits for the handlers (grpc-go's does not by default), which end with the replica.
	opts := []grpc.ServerOption{grpc.WaitForHandlers(true), grpc.ChainUnaryInterceptor(arrive, q.UnaryServer)}
	if cfg.reports {
		opts = append([]grpc.ServerOption{grpc.WaitForHandlers(true), grpc.ChainUnaryInterceptor(arrive)}, q.ServerOptions()...)
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(grpcServiceDesc(h), nil)
	if cfg.stream {
		// ORCA out-of-band reports, as often as the client asks: the setup's interval, scaled.
		if err := q.RegisterOOB(srv, time.Millisecond); err != nil {
			ln.Close()
			return nil, err
		}
	}
	rp := &server{ln: ln, addr: ln.Addr().String(), acct: acct, done: make(chan struct{})}
	rp.stop = func() {
		life.end()
		srv.Stop()
	}
	rp.stats = func() workqueue.Stats {
		s := q.Stats()
		return workqueue.Stats{Workers: s.Workers, Capacity: s.Capacity, Running: s.Running, Queued: s.Queued,
			Admitted: s.Admitted, Rejected: s.Rejected, WaitTotal: time.Duration(waited.Load())}
	}
	go func() {
		defer close(rp.done)
		srv.Serve(ln)
	}()
	return rp, nil
}

// newGRPCClient returns a client that hedges under policy through hedgegrpc.DialOptions() to the
// servers at addrs (several: each an endpoint of hedgegrpc's balancer, named by a resolver of
// the client's own), asking for their ORCA out-of-band reports every loadInterval when it is
// not 0, and a function that closes its connection.
func newGRPCClient(policy hedge.Config, addrs []string, loadInterval time.Duration) (loadClient, error) {
	ic, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{Policy: policy, Idempotent: []string{grpcMethod}, LoadReportInterval: loadInterval})
	if err != nil {
		return loadClient{}, err
	}
	opts := append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	target := "passthrough:///" + addrs[0]
	if len(addrs) > 1 {
		r := manual.NewBuilderWithScheme("hedgeload")
		var st resolver.State
		for _, a := range addrs {
			st.Endpoints = append(st.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a}}})
		}
		r.InitialState(st)
		opts = append(opts, grpc.WithResolvers(r))
		target = r.Scheme() + ":///replicas"
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return loadClient{}, err
	}
	return loadClient{
		call: func(ctx context.Context, i int) error {
			return conn.Invoke(ctx, grpcMethod, wrapperspb.UInt64(uint64(i)), new(emptypb.Empty))
		},
		close: func() { conn.Close() },
	}, nil
}
