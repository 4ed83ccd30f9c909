package hedgegrpc

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

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
// It drives the core's per-call state machine ([hedge.Call]) itself rather than through
// [hedge.Do], so that the first attempt runs on the caller's goroutine: a call that no hedge
// races pays no goroutine hand-off, which on a loopback call costs more than everything else
// the interceptor does. Hedges and retries run on goroutines of their own; a timer starts
// them. Every decision is the state machine's, as in Do; gRPC's invoker honours its context,
// so the caller's cancellation ends the first attempt at once. [hedge.WithRepeatable] and
// [hedge.WithCriticality] on the caller's context apply; [hedge.WithLog] does not (use
// Config.Observer); an attempt learns its index from the [AttemptKey] metadata.
func (i *Interceptor) UnaryClient(ctx context.Context, fullMethod string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	rm, ok := reply.(proto.Message)
	if !ok {
		return invoker(ctx, fullMethod, req, reply, cc, opts...) // cannot be copied per attempt
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	m := i.method(fullMethod)
	c := &unaryCall{i: i, m: m, req: req, replyType: rm.ProtoReflect().Type(), cc: cc, invoker: invoker, co: splitOptions(opts)}
	c.routeCtx.Context, c.route.policy = ctx, m.policy
	rep := hedge.Repeatable
	if !m.repeatableFor(ctx) {
		rep = hedge.NotRepeatable
	}
	c.call = calls.Get().(*hedge.Call)
	c.call.Reset(m.policy, hedge.CallOptions{Repeatable: rep, Criticality: hedge.CriticalityFrom(ctx)})

	c.mu.Lock()
	c.inline = true // attempt 0, when Start asks for it, runs here
	c.apply(c.call.Start(time.Now()))
	first := c.first
	c.mu.Unlock()
	if first != nil {
		c.runInline(first)
	}
	r, err := c.wait()
	if err == nil {
		proto.Reset(rm)
		proto.Merge(rm, r.reply)
		c.co.fill(r)
		return nil
	}
	return c.failure(err)
}

// calls pools the state machines; a Call goes back once its call is over and no goroutine
// can reach it (every access is under unaryCall.mu and checks that the call is not over).
var calls = sync.Pool{New: func() any { return new(hedge.Call) }}

// unaryCall is one call through the interceptor, and the driver of its state machine. Its
// embedded routeCtx is the caller's context with the call's route (the backends its attempts
// used) among its values, for the balancer.
type unaryCall struct {
	routeCtx
	i         *Interceptor
	m         *method
	req       any
	replyType protoreflect.MessageType // attempts never touch the caller's reply
	cc        *grpc.ClientConn
	invoker   grpc.UnaryInvoker
	co        callOptions

	mu       sync.Mutex
	call     *hedge.Call // nil once the call is over
	atts     []*unaryAttempt
	attsBuf  [2]*unaryAttempt
	attempt0 unaryAttempt  // the first attempt, in the same allocation
	inline   bool          // within Start: attempt 0 is left for the caller's goroutine
	first    *unaryAttempt // the attempt the caller's goroutine runs
	timer    *time.Timer
	timerAt  time.Time
	done     chan struct{} // closed when the call is over, once someone waits
	over     bool
	winner   *attemptResult
	err      error
	panicked *hedge.PanicError
	answers  int // attempts that answered, for naming the last failure
	active   int // attempts still reading the caller's request
	idle     chan struct{}
}

// unaryAttempt is one attempt: its context (the caller's, cancelled when the attempt loses),
// its index, and what it received.
type unaryAttempt struct {
	context.Context
	call   *unaryCall
	index  int
	cancel context.CancelFunc
	result attemptResult
	slow   atomic.Bool // cancelled as a loser past the threshold (hedge.Action.Slow); set before cancel
}

// attemptIndexKey is the context key under which an attempt's context answers with itself.
type attemptIndexKey struct{}

func (a *unaryAttempt) Value(key any) any {
	switch key {
	case attemptIndexKey{}:
		return a
	case routeKey{}:
		return &a.call.route
	}
	return a.Context.Value(key)
}

// attemptIndex is the index of the attempt ctx belongs to, whichever driver runs it.
func attemptIndex(ctx context.Context) int {
	if a, ok := ctx.Value(attemptIndexKey{}).(*unaryAttempt); ok {
		return a.index
	}
	info, _ := hedge.AttemptFrom(ctx)
	return info.Index
}

// lostSlow reports whether the attempt ctx belongs to was cancelled as the loser of a race
// past the call's threshold, whichever driver runs it (see hedge.LostSlow).
func lostSlow(ctx context.Context) bool {
	if a, ok := ctx.Value(attemptIndexKey{}).(*unaryAttempt); ok {
		return a.slow.Load()
	}
	return hedge.LostSlow(ctx)
}

// apply carries out the state machine's actions. c.mu is held.
func (c *unaryCall) apply(acts []hedge.Action) {
	for _, a := range acts {
		switch a.Kind {
		case hedge.StartAttempt:
			at := c.newAttempt(a.Attempt)
			if a.Attempt == 0 && c.inline {
				c.first = at
				continue
			}
			go c.runAttempt(at)
		case hedge.CancelAttempt:
			if a.Attempt < len(c.atts) {
				if a.Slow {
					c.atts[a.Attempt].slow.Store(true)
				}
				c.atts[a.Attempt].cancel()
			}
		case hedge.ArmTimer:
			c.arm(a.At)
		case hedge.Finish:
			c.finish()
		}
	}
	c.inline = false
}

// leave records that an attempt no longer reads the caller's request. c.mu is held.
func (c *unaryCall) leave() {
	if c.active--; c.active == 0 && c.idle != nil {
		close(c.idle)
	}
}

func (c *unaryCall) newAttempt(k int) *unaryAttempt {
	a := &c.attempt0
	if k > 0 {
		a = &unaryAttempt{}
	}
	a.call, a.index = c, k
	a.Context, a.cancel = context.WithCancel(c.routeCtx.Context)
	a.Context = c.m.attemptContext(a.Context, k)
	if c.atts == nil {
		c.atts = c.attsBuf[:0]
	}
	for len(c.atts) <= k {
		c.atts = append(c.atts, nil)
	}
	c.atts[k] = a
	c.active++
	return a
}

// arm sets the timer to fire at at.
func (c *unaryCall) arm(at time.Time) {
	c.timerAt = at
	d := time.Until(at)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.timerFired)
	} else {
		c.timer.Reset(d)
	}
}

func (c *unaryCall) timerFired() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over {
		return
	}
	now := time.Now()
	if now.Before(c.timerAt) {
		c.timer.Reset(c.timerAt.Sub(now)) // woken early: wait for the rest
		return
	}
	c.apply(c.call.TimerFired(now))
}

// finish records the call's result and lets go of its state machine. c.mu is held.
func (c *unaryCall) finish() {
	c.over = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if w := c.call.Winner(); w >= 0 {
		c.winner = &c.atts[w].result
	}
	c.err = c.call.Err()
	if pe, ok := c.err.(*hedge.PanicError); ok && c.panicked == nil {
		// The policy's Observer panicked inside the state machine, which ended the call
		// cleanly: the panic goes on in the caller's goroutine, like an attempt's.
		c.panicked = pe
	}
	for _, a := range c.atts {
		if a != nil && &a.result != c.winner {
			a.cancel()
		}
	}
	if c.done != nil {
		close(c.done)
	}
}

// runInline runs the first attempt on the caller's goroutine, runAttempt a hedge or a retry
// on a goroutine of its own. A panic in the attempt (from an interceptor further down the
// chain) ends the call cleanly and goes on in the caller's goroutine as a *hedge.PanicError
// (see wait): it never crashes the process from a goroutine the interceptor started.
func (c *unaryCall) runInline(a *unaryAttempt) { c.runAttempt(a) }

func (c *unaryCall) runAttempt(a *unaryAttempt) {
	if err, ok := c.invokeRecovering(a); ok {
		c.answered(a, err)
	}
}

// invokeRecovering is invoke; when the attempt panics, or calls runtime.Goexit (t.FailNow in
// a test's interceptor), it ends the call with a *hedge.PanicError and reports false.
func (c *unaryCall) invokeRecovering(a *unaryAttempt) (err error, ok bool) {
	defer func() {
		if !ok {
			pe := &hedge.PanicError{Value: recover(), Stack: debug.Stack(), Where: "attempt"}
			c.mu.Lock()
			c.leave()
			c.mu.Unlock()
			c.abort(pe)
		}
	}()
	err = c.invoke(a)
	return err, true
}

// invoke sends one attempt with its own reply message and its own header, trailer and peer.
func (c *unaryCall) invoke(a *unaryAttempt) error {
	r := &a.result
	r.reply = c.replyType.New().Interface()
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
	return c.invoker(a, c.m.name, c.req, r.reply, c.cc, r.opts...)
}

// answered tells the state machine that attempt a answered with err.
func (c *unaryCall) answered(a *unaryAttempt, err error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leave()
	if c.over || a.Err() != nil && c.routeCtx.Context.Err() == nil {
		return // a loser, cancelled: its answer is nobody's
	}
	if err != nil {
		if cause := c.routeCtx.Context.Err(); cause != nil {
			c.apply(c.call.Cancel(now, cause)) // the caller gave up: not the attempt's failure
			return
		}
		c.answers++
		err = c.i.mark(err, &a.result, c.answers)
	}
	o, pe := c.classify(err)
	if pe != nil {
		c.panicked = pe
		c.apply(c.call.Cancel(now, pe))
		return
	}
	c.apply(c.call.AttemptDone(now, a.index, o))
}

// classify runs the method's classifier, turning a panic in it into a *hedge.PanicError.
func (c *unaryCall) classify(err error) (o hedge.Outcome, pe *hedge.PanicError) {
	defer func() {
		if x := recover(); x != nil {
			pe = &hedge.PanicError{Value: x, Stack: debug.Stack(), Where: "Classify"}
		}
	}()
	return c.m.classify(err), nil
}

// abort ends the call because of a panic.
func (c *unaryCall) abort(pe *hedge.PanicError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.panicked == nil {
		c.panicked = pe
	}
	if !c.over {
		c.apply(c.call.Cancel(time.Now(), pe))
	}
}

// startedService reports that the server started work on attempt a.
func (a *unaryAttempt) startedService() {
	c := a.call
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.over {
		c.apply(c.call.AttemptStartedService(time.Now(), a.index))
	}
}

// wait returns the call's result once it is over, and once no attempt reads the caller's
// request any more: the losers, already cancelled, are waited for, so that the caller may
// reuse its request at once, as after a plain call. A panic of an attempt or of the
// classifier goes on in the caller's goroutine.
func (c *unaryCall) wait() (*attemptResult, error) {
	ctx := c.routeCtx.Context
	c.mu.Lock()
	if !c.over {
		c.done = make(chan struct{})
		c.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			c.mu.Lock()
			if !c.over {
				c.apply(c.call.Cancel(time.Now(), ctx.Err()))
			}
			c.mu.Unlock()
		}
		c.mu.Lock()
	}
	if c.active > 0 {
		c.idle = make(chan struct{})
		idle := c.idle
		c.mu.Unlock()
		<-idle
		c.mu.Lock()
	}
	r, err, pe := c.winner, c.err, c.panicked
	for _, a := range c.atts {
		if a != nil {
			a.cancel() // the winner's too: its answer is in, and its context must not outlive the call
		}
	}
	// No goroutine reaches the state machine any more: every access checks c.over first.
	calls.Put(c.call)
	c.call = nil
	c.mu.Unlock()
	if pe != nil {
		panic(pe)
	}
	return r, err
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
