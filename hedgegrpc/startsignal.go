package hedgegrpc

import (
	"context"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// StartedKey is the response header key of the start signal: a server that runs
// [StartSignal] sends response headers carrying it the moment a handler starts work on a
// call, before the handler has answered. A client whose connection has [StatsHandler]
// tells the attempt's policy that the server is serving the attempt, not queueing it, which
// is what start-aware hedging needs to hedge stragglers and not backlogs.
const StartedKey = "hedge-started"

// StartSignalKey is the request metadata key with which a client asks for the start signal.
// An [Interceptor] whose policy's trigger reads start signals
// ([hedge.Trigger.ReadsStartSignals], as [hedge.Tied] does) sends it on every attempt;
// [StartSignal] answers only calls that carry it, so other clients see no change. The signal
// costs every call a write on the server and a wake-up on the client, which triggers that
// hedge on latency alone (AtQuantile, After) do not pay.
const StartSignalKey = "hedge-start-signal"

// startedHeader is the header StartSignal sends; metadata.MD is a map, read-only once sent.
var startedHeader = metadata.Pairs(StartedKey, "1")

// wantsStartSignal reports whether the call asked for the start signal.
func wantsStartSignal(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(StartSignalKey)) > 0
}

// StartSignal is a grpc.UnaryServerInterceptor that, for calls that ask for it
// ([StartSignalKey]), sends the response headers, carrying [StartedKey], when the handler
// starts. Chain it after anything that makes a call wait (a [Queue]):
// grpc.ChainUnaryInterceptor(q.UnaryServer, hedgegrpc.StartSignal), so the signal means
// "a worker has started", not "the call has arrived". A call whose client has gone by then
// (the header cannot be sent, and the call's context is done) is answered with its context's
// status, and its handler is not run.
//
// Headers can be sent once per call: a handler behind StartSignal that calls
// grpc.SetHeader on a call that asked for the signal gets an error, and grpc.SendHeader is
// too late; put such metadata in trailers instead. grpc.SetSendCompressor, which also goes
// in the headers, fails the same way: choose the compressor before StartSignal, or in the
// client's call options.
func StartSignal(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if wantsStartSignal(ctx) && grpc.SendHeader(ctx, startedHeader) != nil && ctx.Err() != nil {
		return nil, gone(ctx) // a call already gone has nobody to tell, nor to serve
	}
	return handler(ctx, req)
}

// StreamStartSignal is [StartSignal] for streaming calls.
func StreamStartSignal(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if ctx := ss.Context(); wantsStartSignal(ctx) && ss.SendHeader(startedHeader) != nil && ctx.Err() != nil {
		return gone(ctx)
	}
	return handler(srv, ss)
}

// gone is the answer to a call whose client went away before its handler started (a hedge's
// loser cancelled as it got its worker): the handler is not run for nobody. The client never
// reads it.
func gone(ctx context.Context) error { return status.FromContextError(ctx.Err()).Err() }

// StatsHandler returns the client-side stats.Handler that reads the start signal: when an
// attempt's response headers carry [StartedKey], it reports the attempt as in service to its
// call (see [hedge.Trigger] and the start-aware trigger). Install it on the client connection
// with grpc.WithStatsHandler, or through [Interceptor.DialOptions], which installs it when a
// trigger of the interceptor reads start signals. Its own work is nothing for calls whose
// server sends no signal, but any stats handler makes grpc-go build an event at each step of
// every call of the connection.
func StatsHandler() stats.Handler { return startSignal{report: hedge.StartedService} }

type startSignal struct {
	report func(context.Context)
}

func (startSignal) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (s startSignal) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	if h, ok := rs.(*stats.InHeader); ok && h.Client && len(h.Header.Get(StartedKey)) > 0 {
		s.report(ctx)
	}
}

func (startSignal) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (startSignal) HandleConn(context.Context, stats.ConnStats) {}
