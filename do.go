package hedge

import (
	"context"
	"runtime"
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
// once. A ctx already done when Do is called sends nothing: Do returns ctx.Err() with no
// event, and the call is not counted in [Policy.Measured] (the caller gave up before the
// dependency was asked, which says nothing of it). An attempt that ignores its context keeps running after Do returns, and its answer is
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
// is recovered and dropped: no goroutine Do started can crash the process. Misuse panics
// with a hedge: message before anything is sent or counted: a nil or zero Policy, a nil
// ctx, a nil fn.
//
// Do is safe for concurrent use; all state lives in p.
func Do[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	v, _, err := run(ctx, p, fn, nil, false)
	return v, err
}

// DoDetached is Do for answers that stay tied to the winning attempt's context after the
// call returns, such as an HTTP response whose body is still to be read. The winning
// attempt's context is not cancelled when DoDetached returns; it is cancelled when ctx is, or
// when the caller calls hold.Release, which it must do once done with the answer (see
// [Hold]).
//
// discard, when not nil, receives every answer that will never be returned: those of losing
// attempts that answered after the call had already been decided. It is where an adapter
// closes a losing response body. It may run in an attempt's goroutine after DoDetached has
// returned. A panic in discard on the caller's goroutine ends the call as a panic in
// Classify does (a *PanicError for the caller, the call ended cleanly first). One in an
// attempt's own goroutine is recovered and dropped: there discard takes the answer of an
// attempt already cancelled (a loser's, once the call was decided, even if DoDetached has not
// quite returned yet; or, with Tied, a queued copy's while the call runs on), and no caller is
// waiting for it.
func DoDetached[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error)) (v T, hold Hold, err error) {
	v, w, err := run(ctx, p, fn, discard, true)
	return v, detach(ctx, w), err
}

// Hold keeps the winning attempt of a [DoDetached] or [DoInlineDetached] call alive: its
// context is not cancelled until Release is called or the call's context ends. It is a value
// rather than a function so that a call handing one out allocates nothing for it: an adapter
// keeps it beside the answer (in the wrapper of a response body, say) and releases it when
// the answer is used up. The zero Hold holds nothing.
type Hold struct {
	w       *attemptState
	gen     uint32 // w's generation: released once the state serves another call, it does nothing
	watched bool   // the call's context can end, and w.watch stops the watch on it
}

// Release ends the hold: it cancels the winning attempt's context. Call it once done with the
// answer. It may be called more than once, on h or on copies of it; all but the first do
// nothing.
func (h Hold) Release() {
	switch {
	case h.w == nil:
	case !h.watched:
		h.w.release(h.gen)
	default:
		h.w.releaseWatched(h.gen)
	}
}

// firstBox is Do's first attempt and its context in one allocation; its state is the kit's.
type firstBox[T any] struct {
	run attemptRun[T]
	ctx attemptCtx
}

// run is Do's and DoDetached's driver, the lean one: each attempt on a goroutine of its own,
// the caller's goroutine driving the call. Its state (see race) lives in a local variable;
// what must live on the heap (the state machine, the event channel, the timer, the first
// attempt's state) comes in a kit reused from call to call, so a call that no hedge races
// allocates only its first attempt, which its goroutine holds.
func run[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error), discard func(T, error), keep bool) (T, *attemptState, error) {
	checkCall(ctx, p, fn)
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, nil, err
	}
	opts := optionsFrom(ctx)
	var s race[T]
	var buf [inlineAttempts]*attemptRun[T]
	atts := buf[:0]
	now := time.Now()
	s.begin(ctx, p, opts, discard, now, !bubbled(now), nil)
	answers := s.answers
	c := s.c
	yielded := false
	acts := c.Start(now)
	for {
		for i := range acts {
			a := &acts[i] // not copied: an Action is six words
			switch a.Kind {
			case StartAttempt:
				if a.Attempt > 0 {
					r := s.newAttempt(a, nil, fn)
					atts = append(atts, r)
					c.AttemptRoute(a.Attempt, &r.route)
					go r.run()
					continue
				}
				// The first attempt's state comes with the kit, and its goroutine starts
				// without a closure (see kit).
				k := s.k
				if k.state == nil {
					k.state = new(attemptState)
				}
				b := &firstBox[T]{}
				b.run.attemptState, b.run.ctx = k.state, &b.ctx
				r := s.newAttempt(a, &b.run, fn)
				atts = append(atts, r)
				c.AttemptRoute(a.Attempt, &r.route)
				k.first = r
				k.taken.Store(false)
				go k.runFirst()
			case CancelAttempt:
				s.cancelAttempt(atts, a)
			case ArmTimer:
				s.armTimer(a)
			}
		}
		acts = nil // carried out; a wake-up that changes nothing must not repeat them
		if c.Done() {
			break
		}
		if s.timerSet && !s.armed {
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
				s.arm(now)
			}
		}
		select {
		case k := <-answers:
			now = since(s.start)
			acts = s.event(atts, k, now)
		case <-ctx.Done():
			now = since(s.start)
			acts = c.Cancel(now, ctx.Err())
		}
	}
	w, winner, err := s.settle(atts, keep, opts.log)
	s.release(atts, winner)
	return s.result(atts, w, winner, err)
}
