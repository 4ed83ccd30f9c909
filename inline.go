package hedge

import (
	"context"
	"sync/atomic"
	"time"
)

// DoInline is [Do] with the first attempt run on the calling goroutine instead of a goroutine
// of its own. On a fast dependency (a loopback HTTP or gRPC call) the hand-off of the first
// attempt to another goroutine costs more than everything else Do does, and a call that no
// hedge races pays nothing for it here.
//
// The price is Do's prompt return: DoInline cannot return before the first attempt does. When
// ctx ends, or a hedge wins, the first attempt's context is cancelled at once, as in Do, but
// DoInline returns only once fn returns, so use it only with attempt functions that honour
// their context (an *http.Transport, a gRPC invoker); with one that ignores it, use Do.
//
// Everything else is Do's: the same state machine makes every decision; hedges and retries
// run on goroutines of their own, started by a timer while the first attempt runs; the
// attempt's context carries its [AttemptInfo] and [StartedService] reaches the call; a panic
// in any attempt, the first included, reaches the caller as a *[PanicError] once the call
// has been ended cleanly, and runtime.Goexit in any attempt ends the calling goroutine;
// [WithLog], [WithRepeatable] and [WithCriticality] apply. While the calling goroutine is
// inside the first attempt, the goroutine of the timer (or of ctx ending) drives the call, so
// Config.Observer may run there.
func DoInline[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	v, _, err := runInline(ctx, p, fn, nil, false)
	return v, err
}

// DoInlineDetached is [DoDetached] with the first attempt run on the calling goroutine, with
// the conditions of [DoInline]: use it only with attempt functions that honour their context.
func DoInlineDetached[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error)) (v T, hold Hold, err error) {
	v, w, err := runInline(ctx, p, fn, discard, true)
	return v, detach(ctx, w), err
}

// Who drives an inline call (see DoInline) at a given moment. The caller's goroutine drives
// it except while it runs the first attempt; then the first goroutine with something to
// report (the timer's, an attempt's that answered or sent a start signal, the one run when the
// caller's context ends) takes the call over and drives it until it is settled.
const (
	ownerCaller int32 = iota // the caller's goroutine drives the call
	ownerNone                // the caller's goroutine is inside the first attempt
	ownerOther               // another goroutine took the call over and settles it
)

// driver is DoInline's: it carries out one call's actions (starts attempts, arms the timer)
// and feeds the state machine what happened, making no decision of its own, like Do's (run).
// Only one goroutine drives a call at a time: the caller's, or, while the caller runs the
// first attempt, the goroutine that took the call over (see owner). Its state lives in the
// driver's allocation, where the goroutine taking over finds it.
//
// A driver, with its kit, serves call after call of its policy: a call that no hedge raced
// hands it back to the policy's pool (see recycle), so such a call allocates only its first
// attempt's context, which the attempt function may keep.
type driver[T any] struct {
	inlineCall[T]
	kit        kit           // the driver's own; its drv is the driver
	firstState *attemptState // the first attempt's, renewed from call to call; nil: none yet
	ownState   attemptState  // where a new driver's firstState is, in the same allocation
	// settled receives one value from the goroutine that took a call over, once it has
	// settled the call, for the caller's goroutine waiting in reclaim. A call nobody took
	// over uses it not at all. Made with the driver (inside a testing/synctest bubble, the
	// bubble's, where waiting on it is durably blocking).
	settled chan struct{}
	// owner is ownerCaller, ownerNone or ownerOther. It is the driver's, not the call's
	// (never zeroed between calls), because the timer's function of a call before, left armed
	// by recycle, may still try to take a call over: it finds the caller driving (a later
	// call's caller busy in its first attempt it may take over, as any goroutine with an event).
	owner atomic.Int32
	// spare is a state released by a DoDetached winner of a call before (see
	// attemptState.release), for the next call's first attempt; nil: none.
	spare atomic.Pointer[attemptState]
}

// inlineCall is a driver's state for one call, zeroed between calls.
type inlineCall[T any] struct {
	race[T]
	log     *Log // WithLog's, written when the call is settled
	fn      func(context.Context) (T, error)
	atts    []*attemptRun[T] // in start order
	attsBuf [inlineAttempts]*attemptRun[T]
	first   attemptRun[T] // attempt 0, in the driver's allocation; its context in its own
	acts    []Action      // to carry out
	stopCtx func() bool   // stops the watch on ctx set while the first attempt runs
	winner  *attemptState // DoDetached's winner, once settled
	err     error         // the call's error, once settled
	won     int32         // the winner's index, once settled
	spawned atomic.Bool   // a goroutine was started to take the call over
	// Flags, together so that the driver stays in a small allocation size class.
	keep       bool // DoDetached: the winner's context outlives the call
	deferFirst bool // within Start: attempt 0 is left for the caller's goroutine
	firstDue   bool // the caller's goroutine is to run attempt 0
}

func runInline[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error), keep bool) (T, *attemptState, error) {
	checkCall(ctx, p, fn)
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, nil, err
	}
	opts := optionsFrom(ctx)
	now := time.Now()
	var d *driver[T]
	pooled := !bubbled(now)
	if pooled {
		d, _ = p.drivers.Get().(*driver[T]) // another type's driver (a policy shared by two) is dropped
	}
	if d == nil {
		d = &driver[T]{}
		d.kit.c, d.kit.answers = calls.Get().(*Call), make(chan int32, 4*p.cfg.attempts+1)
		d.kit.onTimer, d.kit.drv = d.kit.fire, d
		d.kit.lazy = true
		d.firstState = &d.ownState
		d.settled = make(chan struct{}, 1)
	}
	d.log, d.fn, d.keep = opts.log, fn, keep
	d.atts = d.attsBuf[:0]
	d.begin(ctx, p, opts, discard, now, pooled, &d.kit)
	d.park = d.pooled
	d.acts = d.c.Start(now)
	d.deferFirst = true
	d.apply()
	d.deferFirst = false
	if d.firstDue {
		if !d.c.Done() && d.timerSet {
			d.arm(now) // before the caller's goroutine is busy
		}
		d.runFirst()
	} else {
		d.loop(now)
		d.settle()
	}
	v, w, err := d.result(d.atts, int(d.won), d.winner, d.err)
	d.recycle()
	return v, w, err
}

// recycle hands the driver back to its policy's pool after a call that no hedge raced (or
// that the breaker or the limit refused before any attempt: during an outage every call is),
// when nothing can reach it any more: its kit is reusable, its timer never went off (the
// timer's function, once its wake-up is received, may still be trying to take the call
// over), and no goroutine was started that may yet try to. (An attempt that ran on a goroutine of its own may still
// be finishing, and holds the driver.)
func (d *driver[T]) recycle() {
	if len(d.atts) > 1 || d.fired || d.spawned.Load() || !d.reusable() {
		d.stopTimer()      // left armed by settle (see race.park)
		calls.Put(d.kit.c) // the state machine, at least, is free
		return
	}
	p := d.p
	if d.winner != nil {
		// A DoDetached winner's: it lives on until released, and then comes back to the
		// driver for a later call's first attempt (see attemptState.release).
		d.winner.home = &d.spare
		d.firstState = nil
	} else if d.firstState != nil { // nil once a detached winner took it: nothing to renew
		d.firstState.renew()
	}
	d.inlineCall = inlineCall[T]{}
	p.drivers.Put(d)
}

// runFirst runs attempt 0 on the caller's goroutine, then drives the call to its end, or
// waits for the goroutine that took it over while the attempt ran. The second half is
// deferred so that it also runs when the attempt calls runtime.Goexit.
func (d *driver[T]) runFirst() {
	if d.ctx.Done() != nil {
		// While the caller's goroutine is busy, nothing watches ctx: the first goroutine
		// told that it ended takes the call over and cancels the attempts.
		d.stopCtx = context.AfterFunc(d.ctx, d.takeOver)
	}
	d.owner.Store(ownerNone)
	if len(d.answers) > 0 || d.ctx.Err() != nil {
		// Something happened while the caller's goroutine still drove the call (the timer
		// went off, a tied copy answered, ctx ended) and found nobody to take it over: a
		// goroutine of its own does, or nothing would look at it until the attempt returns.
		d.spawned.Store(true)
		go d.takeOver()
	}
	defer d.reclaim()
	d.first.run()
}

// reclaim is what the caller's goroutine does once the first attempt has returned: it
// delivers the attempt's answer (unless the attempt was cancelled as a loser), to the state
// machine at once if nobody took the call over meanwhile, else on the channel the goroutine
// that did is waiting on.
func (d *driver[T]) reclaim() {
	delivered := d.first.state.Load() == attemptDelivered
	if d.owner.CompareAndSwap(ownerNone, ownerCaller) {
		now := since(d.start)
		if delivered {
			d.acts = d.event(d.atts, 0, now)
		}
		d.loop(now)
		d.settle()
		return
	}
	if delivered {
		d.answers <- 0 // never blocks: one slot per attempt
	}
	<-d.settled // settled by the goroutine that took the call over
}

// takeOver drives an inline call to its end from the calling goroutine (the timer's, the
// one run when ctx ends, or an attempt's that sent an event) if the caller's goroutine is
// inside the first attempt and nobody else has taken the call over.
func (d *driver[T]) takeOver() {
	if d.owner.CompareAndSwap(ownerNone, ownerOther) {
		d.loop(since(d.start))
		d.settle()
		d.settled <- struct{}{} // never blocks: one per call, received before the next
	}
}

// takeOverLater is takeOver on a goroutine of its own, when it can succeed.
func (d *driver[T]) takeOverLater() {
	if d.owner.Load() == ownerNone {
		d.spawned.Store(true)
		go d.takeOver()
	}
}

// apply carries out the state machine's actions.
func (d *driver[T]) apply() {
	acts := d.acts
	for i := range acts {
		a := &acts[i] // not copied: an Action is six words
		switch a.Kind {
		case StartAttempt:
			var r *attemptRun[T]
			if a.Attempt == 0 {
				r = &d.first
				if d.firstState == nil {
					if d.firstState = d.spare.Swap(nil); d.firstState == nil {
						d.firstState = new(attemptState)
					}
				}
				r.attemptState, r.ctx = d.firstState, new(attemptCtx)
			}
			r = d.newAttempt(a, r, d.fn)
			r.drv = d
			d.atts = append(d.atts, r)
			d.c.AttemptRoute(a.Attempt, &r.route)
			if d.deferFirst && a.Attempt == 0 {
				d.firstDue, r.inlineFirst = true, true
			} else {
				go r.run()
			}
		case CancelAttempt:
			d.cancelAttempt(d.atts, a)
		case ArmTimer:
			d.armTimer(a)
		}
	}
	d.acts = nil // carried out; a wake-up that changes nothing must not repeat them
}

// loop drives the call until the state machine says it is over; now is the time of the
// last event.
func (d *driver[T]) loop(now time.Time) {
	c := d.c
	for {
		d.apply()
		if c.Done() {
			return
		}
		if d.timerSet && !d.armed && len(d.answers) == 0 {
			d.arm(now)
		}
		select {
		case k := <-d.answers:
			now = since(d.start)
			d.acts = d.event(d.atts, k, now)
		case <-d.ctx.Done():
			now = since(d.start)
			d.acts = c.Cancel(now, d.ctx.Err())
		}
	}
}

// settle ends a call that is over and records its result for the caller's goroutine.
func (d *driver[T]) settle() {
	if d.stopCtx != nil && !d.stopCtx() {
		d.spawned.Store(true) // the watch on ctx went off: its goroutine may still run
	}
	w, winner, err := d.race.settle(d.atts, d.keep, d.log)
	d.won, d.winner, d.err = int32(w), winner, err
}
