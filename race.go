package hedge

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// This file holds what Do's driver (run, in do.go) and DoInline's (driver, in inline.go)
// share: the state of one call's race of attempts, how an event on the answers channel
// becomes the state machine's input, and how a call that is over is settled. A driver starts
// attempts and arms the timer as the state machine's actions say, and makes no decision of
// its own.

// calls pools the state machines the drivers drive. Only the goroutine driving a call
// touches its Call, so it can return to the pool once the call is settled, whatever losing
// attempts are still doing. Timers and channels are not pooled: each belongs to the
// testing/synctest bubble that made it, and a pooled one would cross bubbles.
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

// classify calls the policy's classifier, turning a panic into a *PanicError.
func classify(p *Policy, err error) (o Outcome, pe *PanicError) {
	defer func() {
		if x := recover(); x != nil {
			pe = newPanicError("Classify", x)
		}
	}()
	return p.classify(err), nil
}

// race is one call's state as its driver keeps it. Do's driver keeps it in a local variable
// (it does not escape, so it costs no allocation); DoInline's keeps it in its own allocation,
// where a goroutine taking the call over finds it. The attempts (atts, in start order) are
// not in it but passed to its methods: Do keeps them in an array on its stack, which would
// have to move to the heap if anything the race points to did not (escape analysis follows
// whatever a value points to, not which field).
type race[T any] struct {
	ctx     context.Context
	p       *Policy
	c       *Call
	discard func(T, error) // DoDetached's: answers that will never be returned
	// answers carries attempt indexes, not answers: an element without pointers keeps the
	// channel to one allocation. It has a slot for each attempt's answer and one for each
	// attempt's start signal — attempts, plus as many resends of attempts that never reached
	// the dependency — and one for the timer, so no send on it ever blocks.
	answers  chan int32
	pan      *PanicError
	start    time.Time
	timer    *time.Timer
	timerAt  time.Time // when the state machine wants TimerFired
	pending  int32     // answers of cancelled attempts that are, or will be, in answers
	armed    bool      // timer is set to go off
	timerSet bool      // the state machine wants the timer
}

// begin readies the race of a call of p under ctx, on a pooled state machine.
func (s *race[T]) begin(ctx context.Context, p *Policy, opts callOptions, discard func(T, error)) {
	s.ctx, s.p, s.discard = ctx, p, discard
	s.c = calls.Get().(*Call)
	co := CallOptions{Repeatable: opts.repeatable, Criticality: opts.criticality, Trigger: opts.trigger}
	if p.cfg.useDeadline {
		co.Deadline, _ = ctx.Deadline()
	}
	s.c.Reset(p, co)
	s.answers = make(chan int32, 4*p.cfg.attempts+1)
}

// checkPolicy is every entry point's misuse check.
func checkPolicy(p *Policy) {
	if p == nil || p.bud == nil {
		panic("hedge: Do called with a nil or zero *Policy (build it with hedge.New)")
	}
}

// newAttempt is the attempt the state machine's StartAttempt a asks for; r is where it lives
// (nil: an allocation of its own). The driver appends it to its attempts.
func (s *race[T]) newAttempt(a Action, r *attemptRun[T], fn func(context.Context) (T, error)) *attemptRun[T] {
	if r == nil {
		r = &attemptRun[T]{}
	}
	r.fn, r.discard = fn, s.discard
	r.parent, r.answers, r.info = s.ctx, s.answers, AttemptInfo{Index: a.Attempt, Hedge: a.Hedge, Retry: a.Retry, Resend: a.Resend}
	return r
}

// cancelAttempt carries out a CancelAttempt action.
func (s *race[T]) cancelAttempt(atts []*attemptRun[T], a Action) {
	r := atts[a.Attempt]
	if a.Slow {
		r.slow.Store(true)
	}
	if r.received {
		r.cancel(context.Canceled)
	} else if !r.abandon() {
		s.pending++
	}
}

// armTimer carries out an ArmTimer action: the driver arms the timer before it waits.
func (s *race[T]) armTimer(a Action) {
	if s.armed {
		s.timer.Stop()
		s.armed = false
	}
	s.timerAt, s.timerSet = a.At, true
}

// arm sets the timer to go off in in. A new timer runs f, or, when f is nil, sends the
// wake-up on the answers channel: a timer that runs a function costs one allocation fewer
// than one with a channel, and its wake-up arrives on the channel the driver waits on.
func (s *race[T]) arm(in time.Duration, f func()) {
	if s.timer == nil {
		if f == nil {
			answers := s.answers // the closure holds the channel, not the race
			f = func() { wake(answers) }
		}
		s.timer = time.AfterFunc(in, f)
	} else {
		s.timer.Reset(in)
	}
	s.armed = true
}

// event feeds the state machine what k, received on the answers channel at now, says: the
// timer went off, an attempt's server started work on it, or an attempt answered.
func (s *race[T]) event(atts []*attemptRun[T], k int32, now time.Time) []Action {
	c := s.c
	if k == wakeUp {
		s.armed = false
		if !s.timerSet {
			return nil // a timer stopped too late
		}
		if now.Before(s.timerAt) {
			s.arm(s.timerAt.Sub(now), nil) // woken early: wait for the rest
			return nil
		}
		s.timerSet = false
		return c.TimerFired(now)
	}
	if k < wakeUp {
		return c.AttemptStartedService(now, int(startSignal-k))
	}
	r := atts[k]
	r.received = true
	if r.lost {
		s.pending--
		if s.discard != nil && r.panic == nil {
			s.discard(r.v, r.err)
		}
		return nil
	}
	if r.panic != nil {
		s.pan = r.panic
		return c.Cancel(now, r.panic)
	}
	if r.err != nil && s.ctx.Err() != nil {
		return c.Cancel(now, s.ctx.Err()) // the caller gave up: not the attempt's failure
	}
	o, pe := classify(s.p, r.err)
	if pe != nil {
		s.pan = pe
		return c.Cancel(now, pe)
	}
	return c.AttemptDone(now, int(k), o)
}

// settle ends a call that is over: it stops the timer, collects the answers still on their
// way, cancels the losers (the winner too, unless keep), and returns the state machine to its
// pool. It returns the winner's index, the winner's context when keep, and the call's error.
func (s *race[T]) settle(atts []*attemptRun[T], keep bool, log *Log) (w int, winner *attemptCtx, err error) {
	if s.timer != nil {
		s.timer.Stop()
	}
	for s.pending > 0 {
		k := <-s.answers
		if k < 0 {
			continue // a timer or a start signal
		}
		s.pending--
		r := atts[k] // an answer already on its way when its attempt was cancelled
		if s.discard != nil && r.panic == nil {
			s.discard(r.v, r.err)
		}
	}
	c := s.c
	w = c.Winner()
	for i, r := range atts {
		if keep && i == w {
			winner = &r.attemptCtx
			continue
		}
		r.cancel(context.Canceled)
	}
	if log != nil {
		*log = c.Log()
	}
	if s.pan == nil {
		s.pan = c.panicked // user code the state machine called (the Observer) panicked
	}
	if s.pan != nil && c.won >= 0 && s.discard != nil {
		s.discard(atts[c.won].v, nil) // an answer that was won, and will not be returned
	}
	err = c.Err()
	c.drop()
	calls.Put(c)
	s.c = nil
	if err != nil || s.pan != nil {
		winner = nil
	}
	return w, winner, err
}

// result is what the call returns once settled: a panic goes on in the caller's goroutine
// (runtime.Goexit as Goexit), an error as the error, else the winner's answer.
func (s *race[T]) result(atts []*attemptRun[T], w int, winner *attemptCtx, err error) (T, *attemptCtx, error) {
	if pan := s.pan; pan != nil {
		if pan.goexit {
			runtime.Goexit()
		}
		panic(pan)
	}
	if err != nil {
		var zero T
		return zero, nil, err
	}
	return atts[w].v, winner, nil
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
