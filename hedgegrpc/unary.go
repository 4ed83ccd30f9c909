package hedgegrpc

import (
	"context"
	"errors"
	"sync"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// UnaryClient is a grpc.UnaryClientInterceptor: it sends the call under its method's policy,
// hedged and retried when the method is safe to repeat and the policy allows, sent exactly
// once otherwise.
//
// The call runs on [hedge.DoInline]: the first attempt on the caller's goroutine (a call
// that no hedge races pays no goroutine hand-off, which on a loopback call costs more than
// everything else the interceptor does), hedges and retries on goroutines of their own.
// gRPC's invoker honours its context, which DoInline asks of its attempts. So everything
// [hedge.Do] promises holds here: [hedge.AttemptFrom], [hedge.LostSlow] and
// [hedge.StartedService] work on an attempt's context (an interceptor further down the chain
// sees them); [hedge.WithRepeatable], [hedge.WithCriticality] and [hedge.WithLog] on the
// caller's context apply; a panic in an attempt reaches the caller as a *[hedge.PanicError]
// and runtime.Goexit ends the caller's goroutine. On the wire, an attempt carries its index
// in the [AttemptKey] metadata.
//
// UnaryClient returns once no attempt reads the caller's request any more: the losers,
// already cancelled, are waited for, so that the caller may reuse its request at once, as
// after a plain call.
func (i *Interceptor) UnaryClient(ctx context.Context, fullMethod string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !i.built() {
		co := splitOptions(opts)
		co.finish(errUnbuilt)
		return errUnbuilt
	}
	rm, ok := reply.(proto.Message)
	if !ok {
		return invoker(ctx, fullMethod, req, reply, cc, opts...) // cannot be copied per attempt
	}
	if err := ctx.Err(); err != nil {
		err = status.FromContextError(err).Err()
		co := splitOptions(opts)
		co.finish(err)
		return err
	}
	m := i.method(fullMethod)
	if m == nil {
		return invoker(ctx, fullMethod, req, reply, cc, opts...) // Config.MaxMethods methods have policies
	}
	c := &unaryCall{i: i, m: m, req: req, replyType: rm.ProtoReflect().Type(), cc: cc, invoker: invoker, co: splitOptions(opts)}
	c.routeCtx.Context, c.route.policy = ctx, m.policy
	callCtx := context.Context(c)
	if !m.repeatableFor(ctx) && hedge.RepeatabilityFrom(ctx) != hedge.NotRepeatable {
		callCtx = hedge.WithRepeatable(callCtx, false) // the core's gate suppresses hedges and retries
	}
	c.reply = rm
	defer c.waitIdle() // also when the call panics or an attempt calls runtime.Goexit
	r, err := hedge.DoInline(callCtx, m.policy, unaryAttempt)
	c.waitIdle() // attempt 0 may be writing the caller's reply until it has returned
	if err == nil {
		if r.reply != rm { // a hedge or a retry won
			proto.Reset(rm)
			proto.Merge(rm, r.reply)
		}
		c.co.fill(r)
	} else {
		err = c.failure(err)
	}
	c.co.finish(err)
	return err
}

// unaryCall is one call through the interceptor: what each attempt sends, and how many
// attempts still read the caller's request. It is the context the call runs under: the
// caller's, with the call's route (the backends its attempts used, for the balancer) and the
// call itself among its values, so that one attempt function serves every call
// (unaryAttempt) and a call allocates no closure.
type unaryCall struct {
	routeCtx
	i         *Interceptor
	m         *method
	req       any
	reply     proto.Message            // the caller's: attempt 0 receives into it
	replyType protoreflect.MessageType // of the replies of the other attempts
	cc        *grpc.ClientConn
	invoker   grpc.UnaryInvoker
	co        callOptions
	first     attemptResult // attempt 0's, in the same allocation

	// Hedges and retries run on goroutines of their own and may outlive DoInline (it cancels
	// them when the call is decided, but does not wait for them): every attempt counts itself
	// in active, so that the caller can wait for them (waitIdle). The first attempt usually
	// runs on the caller's goroutine and has returned before DoInline does, but is counted
	// all the same: it receives into the caller's reply, which nothing may touch while it
	// runs.
	mu     sync.Mutex
	active int
	over   bool          // DoInline has returned: an attempt starting now must not send
	idle   chan struct{} // closed when active drops to 0 after over
}

// unaryCallKey is the context key under which a unary call's context answers with the call.
type unaryCallKey struct{}

func (c *unaryCall) Value(key any) any {
	if key == (unaryCallKey{}) {
		return c
	}
	return c.routeCtx.Value(key)
}

// unaryAttempt is the attempt function DoInline runs, for every call: the call is in ctx.
func unaryAttempt(ctx context.Context) (*attemptResult, error) {
	return ctx.Value(unaryCallKey{}).(*unaryCall).attempt(ctx)
}

// attempt sends one attempt with its own reply message and its own header, trailer and peer.
func (c *unaryCall) attempt(ctx context.Context) (*attemptResult, error) {
	info, _ := hedge.AttemptFrom(ctx)
	if !c.enter() {
		return nil, context.Canceled // the call is over: the caller may be reusing its request
	}
	defer c.leave()
	r := &c.first
	if info.Index == 0 {
		// Into the caller's reply, as a plain call does: the call waits for attempt 0 before
		// it returns or copies a winner's reply in (waitIdle), and no other attempt writes it.
		r.reply = c.reply
	} else {
		r = &attemptResult{}
		r.reply = c.replyType.New().Interface()
	}
	// A slice of its own: attempts run at once, and must not append to a shared one.
	r.opts = r.optBuf[:0]
	if n := len(c.co.rest) + 3; n > len(r.optBuf) {
		r.opts = make([]grpc.CallOption, 0, n)
	}
	r.opts = append(r.opts, c.co.rest...)
	r.opts = append(r.opts, grpc.Trailer(&r.trailer)) // the pushback is read from it
	if c.co.header != nil {
		r.opts = append(r.opts, grpc.Header(&r.header))
	}
	if c.co.peer != nil {
		r.opts = append(r.opts, grpc.Peer(&r.peer))
	}
	if err := c.invoker(c.m.attemptContext(ctx, info.Index), c.m.name, c.req, r.reply, c.cc, r.opts...); err != nil {
		return nil, c.i.mark(err, r, c.route.unsent(info.Index))
	}
	return r, nil
}

// enter counts a hedge or a retry that is about to read the caller's request, unless the
// call is over.
func (c *unaryCall) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over {
		return false
	}
	c.active++
	return true
}

// leave records that a hedge or a retry no longer reads the caller's request.
func (c *unaryCall) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active--; c.active == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// waitIdle marks the call over and waits until no attempt reads the caller's request.
func (c *unaryCall) waitIdle() {
	c.mu.Lock()
	c.over = true
	if c.active == 0 {
		c.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	c.idle = idle
	c.mu.Unlock()
	<-idle
}

// failure turns the call's error into the one the caller sees, and fills the caller's
// header, trailer and peer from the attempt whose failure it names.
func (c *unaryCall) failure(err error) error {
	if ctxErr := c.routeCtx.Context.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return status.FromContextError(ctxErr).Err()
	}
	e := newError(err)
	if e.attempt != nil {
		c.co.fill(e.attempt.result)
	}
	return e
}

// attemptIndex is the index of the attempt ctx belongs to (0 outside any call).
func attemptIndex(ctx context.Context) int {
	info, _ := hedge.AttemptFrom(ctx)
	return info.Index
}
