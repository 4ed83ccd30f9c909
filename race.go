package hedge

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds what Do's driver (run, in do.go) and DoInline's (driver, in inline.go)
// share: the state of one call's race of attempts, how an event on the answers channel
// becomes the state machine's input, and how a call that is over is settled. A driver starts
// attempts and arms the timer as the state machine's actions say, and makes no decision of
// its own.

// calls pools the state machines of the kits that could not be reused: only the goroutine
// driving a call touches its Call, so it can be reused once the call is settled, whatever
// losing attempts and late timers are still doing.
var calls = sync.Pool{New: func() any { return new(Call) }}

// kit is what a call's driver needs besides its attempts and can hand on to the next call
// of the same policy: the state machine, the event channel and the timer (with the function
// it runs, made once). Reusing them is what makes a call that no hedge races cheap: a new
// timer costs an allocation and three times what re-arming one does, a new channel another
// allocation (see BenchmarkFloor in bench/). A kit is reused only when nothing can reach it
// any more: its timer stopped before it fired, its channel drained, every attempt of the call
// either answered or told that it lost (see race.reusable).
//
// Timers and channels belong to the testing/synctest bubble that made them, and one used
// across bubbles crashes the program, so a call inside a bubble (told by its clock reading,
// which has no monotonic part there) makes a kit of its own and never reuses it.
type kit struct {
	c       *Call
	answers chan int32
	timer   *time.Timer
	onTimer func()     // k.fire, the timer's function, made once per kit
	drv     takeOverer // an inline call's driver, which the timer wakes or becomes; nil for Do

	// Do's first attempt: its state, renewed from call to call (nil: none yet), and the
	// attempt itself for the goroutine that runs it, started with runFirst (k.startFirst,
	// made once per kit: a go statement with a method value would allocate a closure).
	state    *attemptState
	first    runner
	runFirst func()
	taken    atomic.Bool // the goroutine started with runFirst has read first

	// lazy: the timer is re-armed only when it would go off too late (DoInline's kit; see
	// armBy). Set when the kit is made, never changed.
	lazy bool
	tmu  sync.Mutex // guards due and at, and every Reset of a lazy timer
	due  time.Time  // when the call driving the kit wants its wake-up; zero: no call does
	at   time.Time  // when the timer is set to go off; zero: it is not (it went off, or never was)
}

// runner is an attempt, as the goroutine that runs it sees it.
type runner interface{ run() }

// startFirst runs Do's first attempt, on the goroutine started for it.
func (k *kit) startFirst() {
	r := k.first
	k.taken.Store(true) // the kit is no longer this goroutine's concern (see release)
	r.run()
}

// fire is a kit's timer: it wakes the call's driver, and for an inline call whose caller is
// busy in the first attempt, becomes the driver (see DoInline).
//
// A lazy kit's timer may go off before the call driving it wants its wake-up (it was left
// set for an earlier call, see armBy), or when no call wants one: then it sets itself for
// the call's moment, or stays off, and wakes nobody.
func (k *kit) fire() {
	if k.lazy {
		k.tmu.Lock()
		if k.due.IsZero() {
			k.at = time.Time{}
			k.tmu.Unlock()
			return // no call wants it
		}
		if now := time.Now(); now.Before(k.due) {
			k.at = k.due
			k.timer.Reset(k.due.Sub(now)) // early: wait for the rest
			k.tmu.Unlock()
			return
		}
		k.at = time.Time{}
		k.tmu.Unlock()
	}
	k.wakeDriver()
}

// wakeDriver is fire's wake-up of the call driving the kit, due now or before. It reads the
// kit before it sends: once its wake-up is received, it touches the kit no more.
func (k *kit) wakeDriver() {
	answers, drv := k.answers, k.drv
	wake(answers)
	if drv != nil {
		drv.takeOver()
	}
}

// armBy sets a lazy kit's timer (see kit.lazy) to wake the call driving it at at (now is the
// time of the call's last event). A timer already set to go off no later is left alone: when it
// goes off early, fire sets it again for the rest. Resetting a pending timer is most of what a
// call that no hedge races pays for its timer, and a timer left set by the call before, with
// the same delay, is due before this call's moment, so it is reset once per delay rather than
// once per call.
func (k *kit) armBy(now, at time.Time) {
	k.tmu.Lock()
	k.due = at
	if k.at.IsZero() || at.Before(k.at) {
		k.at = at
		if k.timer == nil {
			k.timer = time.AfterFunc(at.Sub(now), k.onTimer)
		} else {
			k.timer.Reset(at.Sub(now))
		}
	}
	k.tmu.Unlock()
}

// disarm tells a lazy kit's timer that no call wants its wake-up: when it goes off, it wakes
// nobody. It stays set, for the next call to find (see armBy).
func (k *kit) disarm() {
	k.tmu.Lock()
	k.due = time.Time{}
	k.tmu.Unlock()
}

func newKit(p *Policy) *kit {
	k := &kit{c: calls.Get().(*Call), answers: make(chan int32, 4*p.cfg.attempts+1)}
	k.onTimer, k.runFirst = k.fire, k.startFirst
	return k
}

// bubbled reports whether now was read inside a testing/synctest bubble, where the clock
// has no monotonic reading (or, after 2157, outside one, where the answer only costs the
// reuse).
func bubbled(now time.Time) bool { return now == now.Round(0) }

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
	o = p.classify(err)
	if o.Class != Success && o.Err == nil {
		o.Err = err // a failure classified without its error keeps the attempt's own
	}
	return o, nil
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
	k       *kit
	discard func(T, error) // DoDetached's: answers that will never be returned
	// answers (the kit's) carries attempt indexes, not answers: an element without pointers
	// keeps the channel to one allocation. It has a slot for each attempt's answer and one
	// for each attempt's start signal — attempts, plus as many resends of attempts that
	// never reached the dependency — and one for the timer, so no send on it ever blocks.
	answers  chan int32
	pan      *PanicError
	start    time.Time
	timerAt  time.Time // when the state machine wants TimerFired
	pending  int32     // answers of cancelled attempts that are, or will be, in answers
	armed    bool      // the kit's timer is set to go off
	timerSet bool      // the state machine wants the timer
	pooled   bool      // the call is outside any testing/synctest bubble: its kit may be reused
	strayed  bool      // a Stop came too late: the timer's function may yet run
	fired    bool      // the timer went off: for an inline call, its function may still be running
	// park: settle leaves the timer armed, for the driver to stop or to hand on armed with
	// its kit (DoInline's, outside any testing/synctest bubble). Most calls end well before
	// it is due, and the next call finds it due before its own moment, so leaves it alone
	// (see kit.armBy). When a parked timer does go off, it wakes nobody, or sets itself for
	// the moment the call driving the kit by then wants; a wake-up already decided when that
	// call ended reaches the kit's next call, or none, as an early one: the next call re-arms
	// for its own moment (see event) and the state machine hears of no timer before it is due.
	park bool
}

// begin readies the race of a call of p under ctx that starts at now, on kit k (nil: one
// from the policy's pool, or a new one inside a testing/synctest bubble). pooled is
// !bubbled(now), which the caller has read already.
func (s *race[T]) begin(ctx context.Context, p *Policy, opts callOptions, discard func(T, error), now time.Time, pooled bool, k *kit) {
	s.ctx, s.p, s.discard, s.start = ctx, p, discard, now
	s.pooled = pooled
	if k == nil && s.pooled {
		if x := p.kits.Get(); x != nil {
			k = x.(*kit)
		}
	}
	if k == nil {
		k = newKit(p)
	}
	s.k, s.c, s.answers = k, k.c, k.answers
	co := CallOptions{Repeatable: opts.repeatable, Criticality: opts.criticality, Trigger: opts.trigger}
	co.Deadline, _ = ctx.Deadline() // every adaptive policy reads it (see Call.tooLate)
	s.c.Reset(p, co)
}

// reusable reports, once the call is settled, whether nothing can reach its kit any more: no
// timer function that may still run, and no answer or start signal that may still arrive
// (settle has received every answer of an attempt told too late that it lost, and cancelled
// or muted every attempt, which stops their start signals; see startedService). It drains
// what is left on the channel (a wake-up, start signals).
func (s *race[T]) reusable() bool {
	if !s.pooled || s.strayed || s.armed && !s.park {
		return false // the timer's function may still read the kit
	}
	for len(s.answers) > 0 {
		<-s.answers
	}
	return true
}

// othersDone reports whether every attempt but the first that has not answered was told that
// it lost before it could answer: its goroutine will then send nothing on the channel.
func (s *race[T]) othersDone(atts []*attemptRun[T]) bool {
	for _, r := range atts[min(1, len(atts)):] {
		if !r.received && r.state.Load() != attemptAbandoned {
			return false
		}
	}
	return true
}

// release hands Do's kit back to the policy's pool once the call is settled, if it is
// reusable and the first attempt's goroutine has read its attempt from the kit. winner is
// DoDetached's, which lives on.
func (s *race[T]) release(atts []*attemptRun[T], winner *attemptState) {
	k := s.k
	s.k = nil
	// A first attempt still running (a loser that has not answered yet) keeps its state;
	// its goroutine touches nothing else of the kit once it has read its attempt.
	first := len(atts) > 0 && atts[0].attemptState == k.state
	running := first && !atts[0].received
	if running && !k.taken.Load() || !s.othersDone(atts) || !s.reusable() {
		calls.Put(k.c) // the state machine, at least, is free
		return
	}
	switch {
	case !first:
	case running || winner == k.state:
		k.state = nil // it lives on with its attempt (or DoDetached's winner) until it ends
	default:
		k.state.renew()
	}
	k.first = nil
	s.p.kits.Put(k)
}

// checkPolicy is every entry point's misuse check.
func checkPolicy(p *Policy) {
	if p == nil || p.bud == nil {
		panic("hedge: Do called with a nil or zero *Policy (build it with hedge.New)")
	}
}

// checkCall refuses the arguments of a Do call that cannot work, before anything is counted.
func checkCall[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) {
	checkPolicy(p)
	if ctx == nil {
		panic("hedge: Do called with a nil Context (use context.Background())")
	}
	if fn == nil {
		panic("hedge: Do called with a nil function")
	}
}

// newAttempt is the attempt the state machine's StartAttempt a asks for; r is where it lives
// (nil: an allocation of its own; else its state and context are set). The driver appends it
// to its attempts.
func (s *race[T]) newAttempt(a *Action, r *attemptRun[T], fn func(context.Context) (T, error)) *attemptRun[T] {
	if r == nil {
		b := &attemptBox[T]{}
		r = &b.run
		r.attemptState, r.ctx = &b.st, &b.ctx
	}
	r.fn, r.discard = fn, s.discard
	r.answers, r.index = s.answers, int32(a.Attempt)
	*r.ctx = attemptCtx{parent: s.ctx, s: r.attemptState, gen: r.gen, info: packInfo(*a)}
	return r
}

// cancelAttempt carries out a CancelAttempt action.
func (s *race[T]) cancelAttempt(atts []*attemptRun[T], a *Action) {
	r := atts[a.Attempt]
	if a.Slow {
		r.slow.Store(true)
	}
	// An attempt cancelled because the caller's context is done ends as a context derived
	// from it would: with its error (DeadlineExceeded once its deadline passed).
	cause := context.Canceled
	if err := s.ctx.Err(); err != nil {
		cause = err
	}
	if r.received {
		r.cancel(cause)
	} else if !r.abandon(cause) {
		s.pending++
	}
}

// armTimer carries out an ArmTimer action: the driver arms the timer before it waits. (A lazy
// kit's timer needs no stopping: arming it again replaces the moment it wakes the call at.)
func (s *race[T]) armTimer(a *Action) {
	if s.k.lazy {
		s.armed = false
	} else {
		s.stopTimer()
	}
	s.timerAt, s.timerSet = a.At, true
}

// stopTimer stops the timer if it is armed; when it stops too late, its function may still
// run, and its kit is not reused. A lazy kit's timer is told to wake nobody instead: it may be
// set for the kit's next call.
func (s *race[T]) stopTimer() {
	if s.armed {
		if s.k.lazy {
			s.k.disarm()
		} else if !s.k.timer.Stop() {
			s.strayed = true
		}
		s.armed = false
	}
}

// arm sets the timer to go off at s.timerAt (now is the time of the last event); it runs the
// kit's fire.
func (s *race[T]) arm(now time.Time) {
	k := s.k
	switch {
	case k.lazy:
		k.armBy(now, s.timerAt)
	case k.timer == nil:
		k.timer = time.AfterFunc(s.timerAt.Sub(now), k.onTimer)
	default:
		k.timer.Reset(s.timerAt.Sub(now))
	}
	s.armed = true
}

// event feeds the state machine what k, received on the answers channel at now, says: the
// timer went off, an attempt's server started work on it, or an attempt answered.
func (s *race[T]) event(atts []*attemptRun[T], k int32, now time.Time) []Action {
	c := s.c
	if k == wakeUp {
		s.armed, s.fired = false, true
		if !s.timerSet {
			return nil // a timer stopped too late
		}
		if now.Before(s.timerAt) {
			s.arm(now) // woken early: wait for the rest
			return nil
		}
		s.timerSet = false
		if err := s.ctx.Err(); err != nil {
			// The timer and the caller's end came together, and the select took the timer:
			// no hedge or retry for a caller who has gone.
			return c.Cancel(now, err)
		}
		return c.TimerFired(now)
	}
	if k < wakeUp {
		return c.AttemptStartedService(now, int(startSignal-k))
	}
	r := atts[k]
	r.received = true
	if r.lost {
		s.pending--
		if r.panic == nil {
			s.discardAnswer(r.v, r.err)
		}
		return nil
	}
	if r.panic != nil {
		s.pan = r.panic
		return c.Cancel(now, r.panic)
	}
	if r.err != nil && s.ctx.Err() != nil {
		s.discardAnswer(r.v, r.err)       // never returned: the call ends with the caller's error
		return c.Cancel(now, s.ctx.Err()) // the caller gave up: not the attempt's failure
	}
	o, pe := classify(s.p, r.err)
	if pe != nil {
		s.pan = pe
		s.discardAnswer(r.v, r.err) // never returned: the call ends with Classify's panic
		return c.Cancel(now, pe)
	}
	return c.AttemptDone(now, int(k), o)
}

// settle ends a call that is over: it stops the timer, collects the answers still on their
// way, cancels the losers (the winner too, unless keep), and returns the state machine to its
// pool. It returns the winner's index, the winner's context when keep, and the call's error.
func (s *race[T]) settle(atts []*attemptRun[T], keep bool, log *Log) (w int, winner *attemptState, err error) {
	if !s.park {
		s.stopTimer()
	} else if s.armed && s.k.lazy {
		s.k.disarm() // left set for the next call, to wake nobody before then
	}
	for s.pending > 0 {
		k := <-s.answers
		if k < 0 {
			continue // a timer or a start signal
		}
		s.pending--
		r := atts[k] // an answer already on its way when its attempt was cancelled
		r.received = true
		if r.panic == nil {
			s.discardAnswer(r.v, r.err)
		}
	}
	c := s.c
	w = c.Winner()
	var cause error // as in cancelAttempt; read only when an attempt is left to cancel
	for i, r := range atts {
		if keep && i == w {
			winner = r.attemptState
			r.mute()
			continue
		}
		if cause == nil {
			if cause = s.ctx.Err(); cause == nil {
				cause = context.Canceled
			}
		}
		r.cancel(cause)
	}
	if log != nil {
		*log = c.Log()
	}
	if s.pan == nil {
		s.pan = c.panicked // user code the state machine called (the Observer) panicked
	}
	if s.pan != nil && c.won >= 0 {
		s.discardAnswer(atts[c.won].v, nil) // an answer that was won, and will not be returned
	}
	err = c.Err()
	c.drop()
	s.c = nil
	if winner != nil && (err != nil || s.pan != nil) {
		// No Hold will be handed out for it (the call fails or panics): its context must
		// end here, or nothing would ever end it, nor run its AfterFunc callbacks.
		winner.cancel(context.Canceled)
		winner = nil
	}
	return w, winner, err
}

// result is what the call returns once settled: a panic goes on in the caller's goroutine
// (runtime.Goexit as Goexit), an error as the error, else the winner's answer.
func (s *race[T]) result(atts []*attemptRun[T], w int, winner *attemptState, err error) (T, *attemptState, error) {
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

// detach returns the Hold on DoDetached's winner w (the zero Hold when there is none).
func detach(ctx context.Context, w *attemptState) Hold {
	if w == nil {
		return Hold{}
	}
	// The winner's context ends as a context does: with context.Canceled or
	// context.DeadlineExceeded, whatever cause the caller gave.
	// The Hold names the winner's generation: released again once the state serves another
	// call (see attemptState.release), it does nothing. gen is written only by renew, which
	// nothing runs on this state before the Hold is released, so it is read without the lock
	// (as newAttempt does).
	gen := w.gen
	if ctx.Done() == nil {
		// A context that never ends (context.Background) needs no watching.
		return Hold{w: w, gen: gen}
	}
	stop := context.AfterFunc(ctx, func() { w.cancelAt(gen, ctx.Err()) })
	w.mu.Lock()
	w.watch = stop // the state is this call's until released: gen has not moved
	w.mu.Unlock()
	return Hold{w: w, gen: gen, watched: true}
}

// discardAnswer hands an answer that will never be returned to the caller's discard. A panic
// in it ends the call as a panic in Classify does (the caller gets a *PanicError once the call
// is cleanly over), not in the middle of the driver's work, with attempts still to cancel and
// permits to give back.
func (s *race[T]) discardAnswer(v T, err error) {
	if s.discard == nil {
		return
	}
	normal := false
	defer func() {
		if !normal {
			x := recover()
			if s.pan == nil {
				s.pan = newPanicError("discard", x)
				s.pan.goexit = x == nil
			}
		}
	}()
	s.discard(v, err)
	normal = true
}
