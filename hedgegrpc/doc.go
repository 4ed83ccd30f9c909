// Package hedgegrpc puts request hedging into grpc-go, on both sides of the wire.
//
// grpc-go implements gRPC's retry policy but not its hedging policy: a hedgingPolicy in a
// service config is ignored. This package hedges from an interceptor, as a thin layer over the
// core: unary calls run on [hedge.DoInline], with the first attempt on the caller's
// goroutine, and server-streaming calls on [hedge.DoDetached]. Every decision (when to hedge, which gate suppresses a hedge, retry or
// not, who wins, which backend) is the core's.
//
// # Client
//
// [Interceptor] keeps one [hedge.Policy] per method, built from a per-method template
// (Config.Methods) or the default (Config.Policy). It hedges only methods that are safe to
// send more than once: those named in Config.Idempotent, those whose protobuf descriptor has
// idempotency_level NO_SIDE_EFFECTS or IDEMPOTENT, and calls marked with
// [hedge.WithRepeatable]. Every attempt has its own reply message; the winner's is merged into
// the caller's. Status codes: OK wins; a NonFatal code (UNAVAILABLE by default) lets the next
// attempt start; RESOURCE_EXHAUSTED, and UNAVAILABLE with a grpc-retry-pushback-ms trailer,
// pause hedging; every other code is final.
//
// A final failure from one attempt does not end the call while another attempt is still
// running (that is the core's rule, the same as for HTTP): a fast NOT_FOUND from a hedge
// does not hide the primary's OK a moment later. When no attempt succeeds the call returns
// the most informative failure: a final one before a retriable one, then the last to answer.
//
// Server-streaming calls are hedged until their first response message, the commit point.
// Client-streaming and bidi calls are hedged with gRFC A6's replay buffer: sent messages are
// replayed in order on each copy until the call commits, at its first response message, when
// the caller asks for the response headers, or when the messages outgrow Config.ReplayBuffer.
//
// # Native retries
//
// gRPC's own retries (a retryPolicy in the service config) would multiply with the policy's
// attempts, and are not counted by its budget. Turn them off on a connection that uses the
// interceptor, with grpc.WithDisableRetry ([Interceptor.DialOptions] does), and set Attempts
// and Backoff on the policy instead. gRPC's transparent retries stay on: they resend only a
// call that never reached the server's application, which costs the server nothing.
//
// # Backends
//
// The [BalancerName] balancer, selected by a service config ([ServiceConfig]), sends first
// attempts to the resolved backends by power of two choices (fewer attempts outstanding,
// then the lighter load report) and each attempt of a call to a backend no other attempt
// of that call used, whenever another READY backend exists; a backend that keeps failing, or
// whose attempts keep losing races to hedges past the threshold with no success between (it
// swallows requests), is ejected for a while (the core's package replica decides both).
//
// # Server
//
// [StartSignal] sends response headers when a handler starts, the start signal that
// [StatsHandler] reads on the client; [Queue] bounds the handlers running at once with a FIFO
// queue that cancelled calls leave without running, and answers RESOURCE_EXHAUSTED with a
// pushback trailer when it is full. Hedging only pays when a cancelled copy stops costing the
// server: gRPC propagates cancellation, and the Queue makes it reach calls still waiting.
package hedgegrpc
