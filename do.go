package hedge

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Do runs fn under p and returns the first successful answer.
//
// The first attempt starts at once. When it is still running at the policy's threshold and
// every gate agrees, a hedge (a second call of fn) starts, and so on up to Attempts, at most
// MaximumConcurrent at a time; a retriable failure with nothing else in flight is retried
// after a backoff. The first success wins and every other attempt's context is cancelled at
// that moment. A failure never wins a race: when every attempt fails, Do returns an
// *[AttemptsError] that says what happened to each.
//
// Each attempt runs in its own goroutine with its own context, derived from ctx and carrying
// its [AttemptInfo]. When ctx is done, every attempt is cancelled and Do returns ctx.Err() at
// once. An attempt that ignores its context keeps running after Do returns, and its answer is
// dropped: that goroutine is the one Do can leave behind, so attempts should honour their
// context.
//
// # Which failure is returned
//
// A retriable failure never ends the call while another attempt is running. Nor does a
// Permanent one (see [Classify]): it stops new attempts (no hedge, no retry), but an attempt
// still running may yet succeed, and a success from any attempt wins, so a fast final
// failure from one copy (a stale replica's not-found) does not beat a slower copy that
// answers. Once no attempt is running the call ends; the *[AttemptsError] holds every
// attempt's error in start order and names the most informative as its Err: a Permanent
// failure over retriable ones, and among equals the last to answer.
//
// # Panics
//
// A panic in an attempt is carried to the caller: Do panics with a *[PanicError] in the
// calling goroutine (an attempt that calls runtime.Goexit, as t.FailNow does, makes Do call
// runtime.Goexit in the calling goroutine too). So does a panic in Config.Observer or
// Config.Classify, after the call has been ended cleanly: its attempts cancelled, their limit
// permits and the breaker's ticket given back, so the policy stays usable. A panic in an
// attempt whose answer is no longer awaited (a loser that panics after the call was decided)
// is recovered and dropped: no goroutine Do started can crash the process.
//
// Do is safe for concurrent use; all state lives in p.
func Do[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	v, _, err := run(ctx, p, fn, nil, false)
	return v, err
}

// DoDetached is Do for answers that stay tied to the winning attempt's context after the
// call returns, such as an HTTP response whose body is still to be read. The winning
// attempt's context is not cancelled when DoDetached returns; it is cancelled when ctx is, or
// when the caller calls release, which it must do once done with the answer (release is
// never nil and may be called more than once).
//
// discard, when not nil, receives every answer that will never be returned: those of losing
// attempts that answered after the call had already been decided. It is where an adapter
// closes a losing response body. It may run in an attempt's goroutine after DoDetached has
// returned.
func DoDetached[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error)) (v T, release func(), err error) {
	v, w, err := run(ctx, p, fn, discard, true)
	return v, detach(ctx, w), err
}

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
func DoInlineDetached[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error)) (v T, release func(), err error) {
	v, w, err := runInline(ctx, p, fn, discard, true)
	return v, detach(ctx, w), err
}

// detach returns the release function of DoDetached's winner w (nil when there is none).
func detach(ctx context.Context, w *attemptCtx) (release func()) {
	if w == nil {
		return func() {}
	}
	// The winner's context ends as a context does: with context.Canceled or
	// context.DeadlineExceeded, whatever cause the caller gave.
	if ctx.Done() == nil {
		// A context that never ends (context.Background) needs no watching.
		return func() { w.cancel(context.Canceled) }
	}
	stop := context.AfterFunc(ctx, func() { w.cancel(ctx.Err()) })
	return func() { stop(); w.cancel(context.Canceled) }
}

// calls pools the state machines Do drives. Only the goroutine in Do touches a Call, so it can
// return to the pool when Do returns, whatever losing attempts are still doing. Timers and
// channels are not pooled: each belongs to the testing/synctest bubble that made it, and a
// pooled one would cross bubbles.
var calls = sync.Pool{New: func() any { return new(Call) }}

// wakeUp is the attempt index a timer sends on the answers channel. One slot of the channel is
// kept for it, and the send never blocks: a second wake-up while one is pending adds nothing.
const wakeUp = -1

// startSignal is what an attempt sends on the answers channel when its server reports that it
// started work on it (see [StartedService]): startSignal - k for attempt k, below wakeUp.
// Each attempt sends it at most once, and the channel keeps one slot per attempt for it, so
// the send never blocks either.
const startSignal = -2

// since is time.Now for the events of a call that started at start: it reads the monotonic
// clock only (the wall clock follows from start's), which is cheaper, and the state machine
// measures durations, which a step of the wall clock must not change anyway.
func since(start time.Time) time.Time { return start.Add(time.Since(start)) }

// wake sends the timer's wake-up; a second one while one is pending adds nothing.
func wake(answers chan<- int32) {
	select {
	case answers <- wakeUp:
	default:
	}
}

// attemptRun is one attempt in Do: its context, what it runs, and its answer. One
// allocation per attempt carries all of it.
type attemptRun[T any] struct {
	attemptCtx
	fn      func(context.Context) (T, error)
	discard func(T, error)
	v       T
	err     error
	panic   *PanicError
	kicks   atomic.Int32 // calls of the first attempt's kick (see run)
}

func (a *attemptRun[T]) run() {
	normal := false
	defer func() {
		if !normal {
			// fn panicked, or called runtime.Goexit (t.FailNow in a test's attempt
			// function): either way the call must hear of it, or Do would wait forever.
			x := recover()
			a.panic = &PanicError{Value: x, Stack: debug.Stack(), Where: "attempt", goexit: x == nil}
		}
		if a.state.CompareAndSwap(attemptRunning, attemptDelivered) {
			a.answers <- int32(a.info.Index) // never blocks: one slot per attempt
			if a.drv != nil && !a.inlineFirst {
				a.drv.takeOver() // an inline call whose caller is busy needs a driver
			}
		} else if a.discard != nil && a.panic == nil {
			a.discard(a.v, a.err) // the call has moved on without this answer
		}
	}()
	a.v, a.err = a.fn(&a.attemptCtx)
	normal = true
}

// classify calls the policy's classifier, turning a panic into a *PanicError.
func classify(p *Policy, err error) (o Outcome, pe *PanicError) {
	defer func() {
		if x := recover(); x != nil {
			pe = newPanicError("Classify", x)
		}
	}()
	return p.classify(err), nil
}

// run is Do's and DoDetached's driver: each attempt on a goroutine of its own, the caller's
// goroutine driving the call.
func run[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error), keep bool) (T, *attemptCtx, error) {
	var zero T
	if p == nil || p.bud == nil {
		panic("hedge: Do called with a nil or zero *Policy (build it with hedge.New)")
	}
	if err := ctx.Err(); err != nil {
		return zero, nil, err
	}
	opts := optionsFrom(ctx)
	c := calls.Get().(*Call)
	c.Reset(p, CallOptions{Repeatable: opts.repeatable, Criticality: opts.criticality})
	// The channel carries attempt indexes, not answers: an element without pointers keeps
	// the channel to one allocation. It has a slot for each attempt's answer and one for each
	// attempt's start signal — attempts, plus as many resends of attempts that never reached
	// the dependency — and one for the timer, so no send on it ever blocks.
	answers := make(chan int32, 4*p.cfg.attempts+1)
	var inline [inlineAttempts]*attemptRun[T]
	atts := inline[:0]
	var (
		pan      *PanicError
		pending  int // answers of cancelled attempts that are, or will be, in answers
		timer    *time.Timer
		armed    bool      // timer is set to go off
		timerAt  time.Time // when the state machine wants TimerFired
		timerSet bool      // the state machine wants the timer
		yielded  bool
	)
	// kick starts the first attempt and is also the timer's function: one closure for both
	// saves an allocation on every call that needs a timer. Whichever of the attempt's
	// goroutine and the timer calls it first runs the attempt; the other sends the timer's
	// wake-up, which comes no earlier than the timer's time either way.
	var kick func()
	arm := func(in time.Duration) {
		if timer == nil {
			// A timer that runs a function costs one allocation fewer than one with a
			// channel, and its wake-up arrives on the channel Do already waits on.
			f := kick
			if f == nil {
				f = func() { wake(answers) }
			}
			timer = time.AfterFunc(in, f)
		} else {
			timer.Reset(in)
		}
		armed = true
	}
	now := time.Now()
	start := now
	acts := c.Start(now)
	for {
		for _, a := range acts {
			switch a.Kind {
			case StartAttempt:
				r := &attemptRun[T]{fn: fn, discard: discard}
				r.parent, r.answers, r.info = ctx, answers, AttemptInfo{Index: a.Attempt, Hedge: a.Hedge, Retry: a.Retry, Resend: a.Resend}
				atts = append(atts, r)
				c.AttemptRoute(a.Attempt, &r.route)
				if kick == nil {
					kick = func() {
						if r.kicks.Add(1) == 1 {
							r.run()
						} else {
							wake(answers)
						}
					}
					go kick()
				} else {
					go r.run()
				}
			case CancelAttempt:
				if a.Slow {
					atts[a.Attempt].slow.Store(true)
				}
				if r := atts[a.Attempt]; r.received {
					r.cancel(context.Canceled)
				} else if !r.abandon() {
					pending++
				}
			case ArmTimer:
				if armed {
					timer.Stop()
					armed = false
				}
				timerAt, timerSet = a.At, true
			}
		}
		acts = nil // carried out; a wake-up that changes nothing must not repeat them
		if c.Done() {
			break
		}
		if timerSet && !armed {
			// Most calls answer well before any hedge is due. Where the first attempt
			// usually answers at once (a cache hit), giving it one chance to run before
			// paying for a timer saves the timer. Where it waits for I/O, yielding only adds
			// a thread wake-up, so the policy learns which kind of dependency it has.
			if !yielded && len(answers) == 0 && p.yieldPays(c.seq) {
				yielded = true
				runtime.Gosched()
				p.yielded(len(answers) > 0)
			}
			if len(answers) == 0 {
				arm(timerAt.Sub(now))
			}
		}
		select {
		case k := <-answers:
			now = since(start)
			if k == wakeUp {
				armed = false
				if !timerSet {
					continue // a timer stopped too late
				}
				if now.Before(timerAt) {
					arm(timerAt.Sub(now)) // woken early: wait for the rest
					continue
				}
				timerSet = false
				acts = c.TimerFired(now)
				continue
			}
			if k < wakeUp {
				acts = c.AttemptStartedService(now, int(startSignal-k))
				continue
			}
			r := atts[k]
			r.received = true
			if r.lost {
				pending--
				if discard != nil && r.panic == nil {
					discard(r.v, r.err)
				}
				continue
			}
			if r.panic != nil {
				pan = r.panic
				acts = c.Cancel(now, r.panic)
				continue
			}
			o, pe := classify(p, r.err)
			if pe != nil {
				pan = pe
				acts = c.Cancel(now, pe)
				continue
			}
			acts = c.AttemptDone(now, int(k), o)
		case <-ctx.Done():
			now = since(start)
			acts = c.Cancel(now, ctx.Err())
		}
	}
	if timer != nil {
		timer.Stop()
	}
	for pending > 0 {
		k := <-answers
		if k < 0 {
			continue // a timer or a start signal
		}
		pending--
		r := atts[k] // an answer already on its way when its attempt was cancelled
		if discard != nil && r.panic == nil {
			discard(r.v, r.err)
		}
	}
	var winner *attemptCtx
	w := c.Winner()
	for i, r := range atts {
		if keep && i == w {
			winner = &r.attemptCtx
			continue
		}
		r.cancel(context.Canceled)
	}
	if opts.log != nil {
		*opts.log = c.Log()
	}
	if pan == nil {
		pan = c.panicked // user code the state machine called (the Observer) panicked
	}
	if pan != nil && c.won >= 0 && discard != nil {
		discard(atts[c.won].v, nil) // an answer that was won, and will not be returned
	}
	err := c.Err()
	c.drop()
	calls.Put(c)
	if pan != nil {
		if pan.goexit {
			runtime.Goexit()
		}
		panic(pan)
	}
	if err != nil {
		return zero, nil, err
	}
	return atts[w].v, winner, nil
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
// driver's allocation, where the goroutine taking over finds it; Do's lives in locals of run,
// which keeps Do's own fast path a third lighter in memory and about 200 ns cheaper in CPU
// (measured side by side; see BENCHMARKS.md).
type driver[T any] struct {
	ctx context.Context
	p   *Policy
	log *Log // WithLog's, written when the call is settled
	c   *Call
	// answers carries attempt indexes, not answers: an element without pointers keeps the
	// channel to one allocation. It has a slot for each attempt's answer and one for each
	// attempt's start signal — attempts, plus as many resends of attempts that never reached
	// the dependency — and one for the timer, so no send on it ever blocks.
	answers chan int32
	atts    []*attemptRun[T]
	attsBuf [inlineAttempts]*attemptRun[T]
	first   attemptRun[T] // attempt 0, in the driver's allocation; its fn and discard are the call's
	acts    []Action      // to carry out
	pan     *PanicError
	timer   *time.Timer
	timerAt time.Time
	start   time.Time
	stopCtx func() bool    // stops the watch on ctx set while the first attempt runs
	settled sync.WaitGroup // done once the call is settled, while the first attempt runs
	winner  *attemptCtx    // DoDetached's winner, once settled
	err     error          // the call's error, once settled
	won     int32          // the winner's index, once settled
	pending int32          // answers of cancelled attempts that are, or will be, in answers
	owner   atomic.Int32   // ownerCaller, ownerNone or ownerOther
	// Flags, together so that the driver stays in a small allocation size class.
	keep       bool // DoDetached: the winner's context outlives the call
	armed      bool // timer is set to go off
	timerSet   bool // the state machine wants the timer
	deferFirst bool // within Start: attempt 0 is left for the caller's goroutine
	firstDue   bool // the caller's goroutine is to run attempt 0
}

func runInline[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error), keep bool) (T, *attemptCtx, error) {
	var zero T
	if p == nil || p.bud == nil {
		panic("hedge: Do called with a nil or zero *Policy (build it with hedge.New)")
	}
	if err := ctx.Err(); err != nil {
		return zero, nil, err
	}
	opts := optionsFrom(ctx)
	d := &driver[T]{ctx: ctx, p: p, log: opts.log, keep: keep}
	d.first.fn, d.first.discard = fn, discard
	d.c = calls.Get().(*Call)
	d.c.Reset(p, CallOptions{Repeatable: opts.repeatable, Criticality: opts.criticality})
	d.answers = make(chan int32, 4*p.cfg.attempts+1)
	d.atts = d.attsBuf[:0]
	now := time.Now()
	d.start = now
	d.acts = d.c.Start(now)
	d.deferFirst = true
	d.apply()
	d.deferFirst = false
	if d.firstDue {
		if !d.c.Done() && d.timerSet {
			d.arm(d.timerAt.Sub(now)) // before the caller's goroutine is busy
		}
		d.runFirst()
	} else {
		d.loop(now)
		d.settle()
	}
	if pan := d.pan; pan != nil {
		if pan.goexit {
			runtime.Goexit()
		}
		panic(pan)
	}
	if d.err != nil {
		return zero, nil, d.err
	}
	return d.atts[d.won].v, d.winner, nil
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
	d.settled.Add(1)
	d.owner.Store(ownerNone)
	if len(d.answers) > 0 || d.ctx.Err() != nil {
		// Something happened while the caller's goroutine still drove the call (the timer
		// went off, a tied copy answered, ctx ended) and found nobody to take it over: a
		// goroutine of its own does, or nothing would look at it until the attempt returns.
		go d.takeOver()
	}
	defer d.reclaim()
	d.first.run()
}

// reclaim is what the caller's goroutine does once the first attempt has returned.
func (d *driver[T]) reclaim() {
	if d.owner.CompareAndSwap(ownerNone, ownerCaller) {
		d.settled.Done()
		d.loop(since(d.start))
		d.settle()
		return
	}
	d.settled.Wait() // by the goroutine that took the call over
}

// takeOver drives an inline call to its end from the calling goroutine (the timer's, the
// one run when ctx ends, or an attempt's that sent an event) if the caller's goroutine is
// inside the first attempt and nobody else has taken the call over.
func (d *driver[T]) takeOver() {
	if d.owner.CompareAndSwap(ownerNone, ownerOther) {
		d.loop(since(d.start))
		d.settle()
		d.settled.Done()
	}
}

// takeOverLater is takeOver on a goroutine of its own, when it can succeed.
func (d *driver[T]) takeOverLater() {
	if d.owner.Load() == ownerNone {
		go d.takeOver()
	}
}

// onTimer is an inline call's timer: it wakes the driver, or becomes it.
func (d *driver[T]) onTimer() {
	wake(d.answers)
	d.takeOver()
}

func (d *driver[T]) arm(in time.Duration) {
	if d.timer == nil {
		// A timer that runs a function costs one allocation fewer than one with a
		// channel; it wakes the driver on the channel it waits on, or becomes it.
		d.timer = time.AfterFunc(in, d.onTimer)
	} else {
		d.timer.Reset(in)
	}
	d.armed = true
}

// apply carries out the state machine's actions.
func (d *driver[T]) apply() {
	for _, a := range d.acts {
		switch a.Kind {
		case StartAttempt:
			r := &d.first
			if a.Attempt != 0 {
				r = &attemptRun[T]{fn: d.first.fn, discard: d.first.discard}
			}
			r.parent, r.answers, r.info, r.drv = d.ctx, d.answers, AttemptInfo{Index: a.Attempt, Hedge: a.Hedge, Retry: a.Retry, Resend: a.Resend}, d
			d.atts = append(d.atts, r)
			d.c.AttemptRoute(a.Attempt, &r.route)
			if d.deferFirst && a.Attempt == 0 {
				d.firstDue, r.inlineFirst = true, true
			} else {
				go r.run()
			}
		case CancelAttempt:
			if a.Slow {
				d.atts[a.Attempt].slow.Store(true)
			}
			if r := d.atts[a.Attempt]; r.received {
				r.cancel(context.Canceled)
			} else if !r.abandon() {
				d.pending++
			}
		case ArmTimer:
			if d.armed {
				d.timer.Stop()
				d.armed = false
			}
			d.timerAt, d.timerSet = a.At, true
		}
	}
	d.acts = nil // carried out; a wake-up that changes nothing must not repeat them
}

// loop drives the call until the state machine says it is over; now is the time of the
// last event.
func (d *driver[T]) loop(now time.Time) {
	c, p, answers, discard := d.c, d.p, d.answers, d.first.discard
	for {
		d.apply()
		if c.Done() {
			return
		}
		if d.timerSet && !d.armed && len(answers) == 0 {
			d.arm(d.timerAt.Sub(now))
		}
		select {
		case k := <-answers:
			now = since(d.start)
			if k == wakeUp {
				d.armed = false
				if !d.timerSet {
					continue // a timer stopped too late
				}
				if now.Before(d.timerAt) {
					d.arm(d.timerAt.Sub(now)) // woken early: wait for the rest
					continue
				}
				d.timerSet = false
				d.acts = c.TimerFired(now)
				continue
			}
			if k < wakeUp {
				d.acts = c.AttemptStartedService(now, int(startSignal-k))
				continue
			}
			r := d.atts[k]
			r.received = true
			if r.lost {
				d.pending--
				if discard != nil && r.panic == nil {
					discard(r.v, r.err)
				}
				continue
			}
			if r.panic != nil {
				d.pan = r.panic
				d.acts = c.Cancel(now, r.panic)
				continue
			}
			o, pe := classify(p, r.err)
			if pe != nil {
				d.pan = pe
				d.acts = c.Cancel(now, pe)
				continue
			}
			d.acts = c.AttemptDone(now, int(k), o)
		case <-d.ctx.Done():
			now = since(d.start)
			d.acts = c.Cancel(now, d.ctx.Err())
		}
	}
}

// settle ends a call that is over: it stops the timer, collects the answers still on their
// way, cancels the losers, and records the result.
func (d *driver[T]) settle() {
	if d.stopCtx != nil {
		d.stopCtx()
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	for d.pending > 0 {
		k := <-d.answers
		if k < 0 {
			continue // a timer or a start signal
		}
		d.pending--
		r := d.atts[k] // an answer already on its way when its attempt was cancelled
		if discard := d.first.discard; discard != nil && r.panic == nil {
			discard(r.v, r.err)
		}
	}
	c := d.c
	w := c.Winner()
	d.won = int32(w)
	for i, r := range d.atts {
		if d.keep && i == w {
			d.winner = &r.attemptCtx
			continue
		}
		r.cancel(context.Canceled)
	}
	if d.log != nil {
		*d.log = c.Log()
	}
	if d.pan == nil {
		d.pan = c.panicked // user code the state machine called (the Observer) panicked
	}
	if discard := d.first.discard; d.pan != nil && c.won >= 0 && discard != nil {
		discard(d.atts[c.won].v, nil) // an answer that was won, and will not be returned
	}
	d.err = c.Err()
	if d.err != nil || d.pan != nil {
		d.winner = nil
	}
	c.drop()
	calls.Put(c)
	d.c = nil
}

const (
	attemptRunning int32 = iota
	attemptDelivered
	attemptAbandoned
)

// closedChan is returned by Done of a context cancelled before anyone asked for its channel.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// attemptCtx is an attempt's context: the caller's context plus the attempt's identity and
// its own cancellation. It is written by hand rather than built with context.WithCancel and
// WithValue because it is one allocation instead of three on the path every call takes; the
// caller's cancellation reaches it through Do, which watches ctx.Done() while attempts run (so
// for the moment between the caller's context ending and Do noticing, an attempt's Err is
// still nil, as with any context that is cancelled a little later than its parent).
type attemptCtx struct {
	parent      context.Context
	info        AttemptInfo
	answers     chan<- int32 // Do's event channel: the attempt's index, once its answer is set
	state       atomic.Int32 // attemptRunning → attemptDelivered (answer sent) or attemptAbandoned
	started     atomic.Bool  // the start signal was sent
	slow        atomic.Bool  // cancelled as a loser past the threshold (LostSlow); set before cancel
	route       Route        // where the transport sent it (Routed)
	drv         takeOverer   // an inline call's driver; nil for Do's calls
	inlineFirst bool         // runs on the caller's goroutine (DoInline's first attempt)
	lost        bool         // cancelled as a loser; owned by Do's goroutine
	received    bool         // Do has its answer; owned by Do's goroutine

	mu       sync.Mutex
	done     chan struct{} // created lazily
	err      error
	after    []afterFunc // registered by AfterFunc, run on cancel
	afterBuf [2]afterFunc
	afterID  uint32
}

func (a *attemptCtx) Deadline() (time.Time, bool) { return a.parent.Deadline() }

func (a *attemptCtx) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
	}
	return a.done
}

func (a *attemptCtx) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *attemptCtx) Value(key any) any {
	switch key {
	case attemptInfoKey{}:
		return &a.info
	case attemptKey{}:
		return a
	}
	return a.parent.Value(key)
}

// attemptKey finds the attemptCtx under a context derived from it, for StartedService.
type attemptKey struct{}

// startedService sends the attempt's start signal to Do, once, while Do may still want it.
func (a *attemptCtx) startedService() {
	if a.answers == nil || a.state.Load() != attemptRunning || !a.started.CompareAndSwap(false, true) {
		return
	}
	a.answers <- startSignal - int32(a.info.Index) // never blocks: one slot per attempt
	if a.drv != nil {
		// Sent from inside an attempt: an inline call whose caller is busy needs a driver
		// now (a tied copy to cancel), and this goroutine cannot be it.
		a.drv.takeOverLater()
	}
}

// takeOverer is an inline call's driver (see DoInline), as attempts see it: each event sent
// while the caller's goroutine is inside the first attempt asks it to be driven.
type takeOverer interface {
	takeOver()
	takeOverLater()
}

func (a *attemptCtx) String() string { return "hedge.attemptCtx" }

func (a *attemptCtx) cancel(err error) {
	if err == nil {
		err = context.Canceled
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return
	}
	a.err = err
	if a.done == nil {
		a.done = closedChan
	} else {
		close(a.done)
	}
	for _, r := range a.after {
		go r.f()
	}
	a.after = nil
}

// AfterFunc arranges for f to run in its own goroutine once the attempt is cancelled, like
// context.AfterFunc. Having it lets the context package (and net/http, which derives a
// context from every request's) link child contexts to an attempt without a goroutine each.
func (a *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		go f()
		return func() bool { return false }
	}
	// The first registrations live in the attempt's own allocation; an id, not a pointer
	// to f, tells stop which one is its own.
	if a.after == nil {
		a.after = a.afterBuf[:0]
	}
	a.afterID++
	id := a.afterID
	a.after = append(a.after, afterFunc{f: f, id: id})
	return func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for i, r := range a.after {
			if r.id == id {
				a.after = append(a.after[:i], a.after[i+1:]...)
				return true
			}
		}
		return false
	}
}

// afterFunc is a function registered with attemptCtx.AfterFunc.
type afterFunc struct {
	f  func()
	id uint32
}

// abandon cancels a losing attempt. It reports whether the attempt's goroutine will see that
// it lost (and discard its own answer); false means its answer is already on its way to Do.
func (a *attemptCtx) abandon() bool {
	a.lost = true
	a.cancel(context.Canceled)
	return a.state.CompareAndSwap(attemptRunning, attemptAbandoned)
}
