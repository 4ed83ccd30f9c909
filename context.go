package hedge

import "context"

// Repeatability says whether a call may reach the dependency more than once.
type Repeatability uint8

const (
	// RepeatableDefault leaves the decision to the driver: Do treats the call as repeatable
	// (wrapping a function in a hedging policy says it is safe to run twice); the HTTP adapter
	// decides from the method and the Idempotency-Key header.
	RepeatableDefault Repeatability = iota
	// Repeatable: the call is safe to send more than once.
	Repeatable
	// NotRepeatable: the call is sent exactly once: no hedge, no retry.
	NotRepeatable
)

// Criticality is how much a call matters, carried in its context. With
// Config.NeverHedgeSheddable set, a [Sheddable] call is never hedged: under pressure it is the
// first work to give up.
type Criticality uint8

const (
	// CriticalityDefault is a call that says nothing about its criticality.
	CriticalityDefault Criticality = iota
	// Critical is a call the user is waiting on; it is hedged as any other.
	Critical
	// Sheddable is a call that may be dropped under pressure (prefetches, batch work): with
	// Config.NeverHedgeSheddable set it is never hedged.
	Sheddable
)

func (c Criticality) String() string {
	switch c {
	case Critical:
		return "critical"
	case Sheddable:
		return "sheddable"
	}
	return "default"
}

type callOptionsKey struct{}

// callOptions is what a caller attached to a context for the calls made with it. One value
// under one key, so Do looks up all of it with one ctx.Value.
type callOptions struct {
	repeatable  Repeatability
	criticality Criticality
	log         *Log
	trigger     *Trigger // WithTrigger's; nil: the policy's
}

func optionsFrom(ctx context.Context) callOptions {
	if o, ok := ctx.Value(callOptionsKey{}).(*callOptions); ok {
		return *o
	}
	return callOptions{}
}

func withOptions(ctx context.Context, edit func(*callOptions)) context.Context {
	o := optionsFrom(ctx)
	edit(&o)
	return context.WithValue(ctx, callOptionsKey{}, &o)
}

// WithRepeatable marks the calls made with ctx as safe (true) or unsafe (false) to send more
// than once. Unsafe calls are never hedged or retried.
func WithRepeatable(ctx context.Context, repeatable bool) context.Context {
	r := NotRepeatable
	if repeatable {
		r = Repeatable
	}
	return withOptions(ctx, func(o *callOptions) { o.repeatable = r })
}

// RepeatabilityFrom returns the repeatability set by [WithRepeatable], or RepeatableDefault.
func RepeatabilityFrom(ctx context.Context) Repeatability { return optionsFrom(ctx).repeatable }

// WithCriticality attaches a criticality to the calls made with ctx.
func WithCriticality(ctx context.Context, c Criticality) context.Context {
	return withOptions(ctx, func(o *callOptions) { o.criticality = c })
}

// CriticalityFrom returns the criticality set by [WithCriticality], or CriticalityDefault.
func CriticalityFrom(ctx context.Context) Criticality { return optionsFrom(ctx).criticality }

// WithLog asks Do to copy the attempt log of the call made with ctx into *l when the call
// ends. It is how a caller sees, for one call, what each attempt did.
func WithLog(ctx context.Context, l *Log) context.Context {
	return withOptions(ctx, func(o *callOptions) { o.log = l })
}

// AttemptInfo tells an attempt which attempt it is, so a transport can route a hedge to
// another replica or mark it on the wire.
type AttemptInfo struct {
	Index int  // 0 for the first attempt, then 1, 2, … in start order
	Hedge bool // a concurrent copy sent because the call was slow
	Retry bool // a sequential retry after a failure
	// Resend: the attempt replaces one that never reached the dependency (see
	// [Outcome].Unsent); it keeps that one's Hedge and Retry, and should go to another
	// replica.
	Resend bool
}

type attemptInfoKey struct{}

// AttemptFrom returns the attempt an attempt function is running as. ok is false outside an
// attempt.
func AttemptFrom(ctx context.Context) (info AttemptInfo, ok bool) {
	a, ok := ctx.Value(attemptInfoKey{}).(*attemptCtx)
	if !ok {
		return AttemptInfo{}, false
	}
	return a.attemptInfo(), true
}

// StartedService tells the call that ctx's attempt belongs to that the server has started work
// on this attempt: it is no longer waiting in a queue. ctx is the context Do passed to the
// attempt function, or one derived from it. A transport calls it when the server says so (an
// HTTP server's informational response, a gRPC server's response headers), from any
// goroutine. Only the first call for an attempt counts; later ones do nothing.
//
// Do delivers the signal to the call's state machine ([Call.AttemptStartedService]) on the
// call's own goroutine, so triggers can tell an attempt that is slow in service (a straggler
// worth hedging) from one still queued behind others (where a copy only adds load): with
// [Tied], the first attempt to start cancels its still-queued copies. Outside an attempt, or
// once the attempt has answered, it does nothing. It never blocks and allocates nothing.
func StartedService(ctx context.Context) {
	if a, ok := ctx.Value(attemptKey{}).(*attemptCtx); ok {
		a.startedService()
	}
}

// LostSlow reports whether ctx's attempt was cancelled as the loser of a race that says
// something against the replica it went to: another attempt of its call answered first while
// this one had been running for at least the call's hedge threshold ([Action].Slow). ctx is
// the context Do passed to the attempt function, or one derived from it. A transport that
// keeps track of its replicas' health (hedgehttp, hedgegrpc, package replica) reads it once
// the attempt has ended with its context cancelled, and reports such an attempt as
// replica.Slow rather than as saying nothing: a replica whose every attempt keeps losing
// races while hedges rescue its calls is swallowing requests, and is ejected for it. It is
// false outside an attempt, for an attempt still running, and for one cancelled because its
// caller gave up or because a copy answered before it had run a threshold.
func LostSlow(ctx context.Context) bool {
	a, ok := ctx.Value(attemptKey{}).(*attemptCtx)
	return ok && a.lostSlow()
}
