package hedge

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/replica"
)

// This file holds an attempt as every driver runs it: the goroutine's body (attemptRun.run),
// the attempt's context (attemptCtx), which carries its AttemptInfo, and the attempt's state
// behind it (attemptState): its start signal and its own cancellation.

// attemptRun is one attempt in Do: its context and state, what it runs, and its answer. An
// attempt that runs on a goroutine of its own lives in one allocation with its context and
// state (see attemptBox). DoInline's first attempt and its state live in the driver, which is
// reused from call to call; only its context, which the attempt function may keep, is
// allocated per call.
type attemptRun[T any] struct {
	*attemptState
	ctx     *attemptCtx
	fn      func(context.Context) (T, error)
	discard func(T, error)
	v       T
	err     error
	panic   *PanicError
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
			if a.inlineFirst {
				return // the caller's goroutine delivers it (see driver.reclaim)
			}
			a.answers <- a.index // never blocks: one slot per attempt
			if a.drv != nil {
				a.drv.takeOver() // an inline call whose caller is busy needs a driver
			}
		} else if a.discard != nil && a.panic == nil {
			discardLate(a.discard, a.v, a.err) // the call has moved on without this answer
		}
	}()
	a.v, a.err = a.fn(a.ctx)
	normal = true
}

// attemptBox is an attempt, its context and its state in one allocation.
type attemptBox[T any] struct {
	run attemptRun[T]
	ctx attemptCtx
	st  attemptState
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
// WithValue because it is one small allocation instead of three on the path every call
// takes; the caller's cancellation reaches it through Do, which watches ctx.Done() while
// attempts run (so for the moment between the caller's context ending and Do noticing, an
// attempt's Err is still nil, as with any context that is cancelled a little later than its
// parent).
//
// Its state (cancellation, start signal, route) is in an attemptState, which DoInline reuses
// for the next call's first attempt once a call is over (see driver.recycle). The context
// itself is never reused: it names the generation of the state it belongs to, and once the
// state has moved on to another call, the context answers as the cancelled context it was
// left as (Err is context.Canceled, Done is closed) and its start signals and routes go
// nowhere, however long the attempt function kept it.
type attemptCtx struct {
	parent context.Context
	s      *attemptState
	gen    uint32 // s.gen when this context was made
	info   uint32 // the AttemptInfo, packed (see packInfo)
}

// attemptState is an attempt's state behind its context.
type attemptState struct {
	answers     chan<- int32 // the driver's event channel: the attempt's index, once its answer is set
	index       int32        // the attempt's index
	state       atomic.Int32 // attemptRunning → attemptDelivered (answer sent) or attemptAbandoned
	slow        atomic.Bool  // cancelled as a loser past the threshold (LostSlow); set before cancel
	route       Route        // where the transport sent it (Routed)
	drv         takeOverer   // an inline call's driver; nil for Do's calls
	inlineFirst bool         // runs on the caller's goroutine (DoInline's first attempt)
	lost        bool         // cancelled as a loser; owned by the driver
	received    bool         // the driver has its answer; owned by the driver

	mu       sync.Mutex
	gen      uint32        // which call's attempt the state is (see attemptCtx)
	started  bool          // the start signal was sent
	muted    bool          // no more start signals (see mute)
	done     chan struct{} // created lazily
	err      error
	after    []afterFunc // registered by AfterFunc, run on cancel
	afterBuf [2]afterFunc
	afterID  uint32 // the last registration's id; never reset, so ids do not repeat
	// stop is the stop function AfterFunc hands out for one registration at a time, stopID
	// (0: stop is not out); made once per incarnation stopInc. A stop function out when
	// the state is renewed may never be called (its registration ran, or the child context
	// that holds it was dropped), or may be called late: renew then drops it, and its
	// incarnation, for a new one.
	stop    func() bool
	stopID  uint32
	stopInc uint32

	// watch, for a DoDetached winner whose call's context can end, stops the watch on it (see
	// detach); taken by the first Release.
	watch func() bool

	// home, for a DoInlineDetached winner whose driver has let go of it, is the driver's
	// slot for a spare state, where it goes once released (see release); nil: nowhere.
	// Written before the call returns, by the driver; read by release.
	home *atomic.Pointer[attemptState]
}

// packInfo packs what AttemptInfo says of a's attempt into a word: the index in the low 24
// bits (a call has at most a few attempts), then one bit for each of Hedge, Retry, Resend.
func packInfo(a Action) uint32 {
	w := uint32(a.Attempt) & indexMask
	if a.Hedge {
		w |= 1 << 24
	}
	if a.Retry {
		w |= 1 << 25
	}
	if a.Resend {
		w |= 1 << 26
	}
	return w
}

const indexMask = 1<<24 - 1

func (a *attemptCtx) attemptInfo() AttemptInfo {
	return AttemptInfo{Index: int(a.info & indexMask), Hedge: a.info&(1<<24) != 0, Retry: a.info&(1<<25) != 0, Resend: a.info&(1<<26) != 0}
}

// current reports whether the state is still this context's; the caller holds s.mu.
func (a *attemptCtx) current() bool { return a.s.gen == a.gen }

func (a *attemptCtx) Deadline() (time.Time, bool) { return a.parent.Deadline() }

// Done, Err and AfterFunc, which net/http calls on every request, unlock by hand rather than
// by defer: nothing between the lock and the unlock can panic.

func (a *attemptCtx) Done() <-chan struct{} {
	s := a.s
	s.mu.Lock()
	if !a.current() {
		s.mu.Unlock()
		return closedChan
	}
	if s.done == nil {
		s.done = make(chan struct{})
	}
	d := s.done
	s.mu.Unlock()
	return d
}

func (a *attemptCtx) Err() error {
	s := a.s
	s.mu.Lock()
	err := s.err
	if !a.current() {
		err = context.Canceled
	}
	s.mu.Unlock()
	return err
}

func (a *attemptCtx) Value(key any) any {
	switch key.(type) { // a comparison of types: each key type has one value
	case attemptInfoKey, attemptKey:
		return a
	}
	return a.parent.Value(key)
}

// attemptKey finds the attemptCtx under a context derived from it, for StartedService.
type attemptKey struct{}

// startedService sends the attempt's start signal to the driver, once, while it may still
// want it. It sends under the state's lock, and only while the attempt is neither cancelled
// nor answered: a driver settling its call cancels (or mutes) every attempt, so once it has,
// no start signal can reach the event channel, which its next call may reuse (see kit).
func (a *attemptCtx) startedService() {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.current() || s.answers == nil || s.started || s.err != nil || s.muted || s.state.Load() != attemptRunning {
		return
	}
	s.started = true
	s.answers <- startSignal - s.index // never blocks: one slot per attempt
	if s.drv != nil {
		// Sent from inside an attempt: an inline call whose caller is busy needs a driver
		// now (a tied copy to cancel), and this goroutine cannot be it.
		s.drv.takeOverLater()
	}
}

// lostSlow is LostSlow's answer for this context.
func (a *attemptCtx) lostSlow() bool {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.current() && s.slow.Load()
}

// routeTo records the attempt's replica (Routed).
func (a *attemptCtx) routeTo(set *replica.Set, i int) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.current() {
		s.route.To(set, i)
	}
}

func (a *attemptCtx) String() string { return "hedge.attemptCtx" }

// AfterFunc arranges for f to run in its own goroutine once the attempt is cancelled, like
// context.AfterFunc. Having it lets the context package (and net/http, which derives a
// context from every request's) link child contexts to an attempt without a goroutine each.
//
// The stop function of one registration at a time is the state's own (see
// attemptState.stop), made once and handed out again once called, so that the registration
// net/http makes on every request allocates nothing. Its callers are the context package's
// child contexts, which call a stop function at most once; context.AfterFunc, the way to
// reach this method, hands out a stop function of its own, which may be called any number of
// times.
func (a *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	s := a.s
	s.mu.Lock()
	if !a.current() || s.err != nil {
		s.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	// The first registrations live in the attempt's own allocation; an id, not a pointer
	// to f, tells stop which one is its own. Ids never repeat within a state, whatever the
	// generation, so a stop function called once the state serves another call finds nothing.
	if s.after == nil {
		s.after = s.afterBuf[:0]
	}
	s.afterID++
	id := s.afterID
	s.after = append(s.after, afterFunc{f: f, id: id})
	if s.stopID == 0 {
		if s.stop == nil {
			inc := s.stopInc
			s.stop = func() bool { return s.stopShared(inc) }
		}
		s.stopID = id
		stop = s.stop
		s.mu.Unlock()
		return stop
	}
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		ok := a.current() && s.unregister(id)
		s.mu.Unlock()
		return ok
	}
}

// stopShared is the state's own stop function (see AfterFunc) of incarnation inc: it stops
// registration stopID and hands the function back for the next registration. A function of
// an incarnation dropped by renew does nothing.
func (s *attemptState) stopShared(inc uint32) bool {
	s.mu.Lock()
	id := s.stopID
	if inc != s.stopInc || id == 0 {
		s.mu.Unlock()
		return false
	}
	s.stopID = 0
	ok := s.unregister(id)
	s.mu.Unlock()
	return ok
}

// unregister removes registration id, if it is still there; the caller holds s.mu.
func (s *attemptState) unregister(id uint32) bool {
	for i := range s.after {
		if s.after[i].id == id {
			n := len(s.after) - 1
			if i < n {
				copy(s.after[i:], s.after[i+1:])
			}
			s.after[n] = afterFunc{} // keep nothing it registered alive
			s.after = s.after[:n]
			return true
		}
	}
	return false
}

// afterFunc is a function registered with attemptCtx.AfterFunc.
type afterFunc struct {
	f  func()
	id uint32
}

// takeOverer is an inline call's driver (see DoInline), as attempts see it: each event sent
// while the caller's goroutine is inside the first attempt asks it to be driven.
type takeOverer interface {
	takeOver()
	takeOverLater()
}

// mute stops the attempt's start signals: its call is settled, and the attempt, a
// DoDetached winner, is not cancelled.
func (s *attemptState) mute() {
	s.mu.Lock()
	s.muted = true
	s.mu.Unlock()
}

func (s *attemptState) cancel(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelLocked(err)
}

// cancelAt is cancel for the state's generation gen only: a DoDetached release function
// called again once the state serves another call does nothing.
func (s *attemptState) cancelAt(gen uint32, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen {
		s.cancelLocked(err)
	}
}

// release is a DoDetached winner's release when nothing else can cancel it any more (the
// watch on the caller's context, if any, was stopped before it went off): it cancels the
// winner of generation gen and, when its driver let go of it (home is set), renews it and
// hands it back to the driver for a later call's first attempt. The attempt has returned (it won),
// so once it is cancelled only its context can reach the state, and the context, whose
// generation is gone, then answers as the cancelled context it was left as.
func (s *attemptState) release(gen uint32) {
	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return // released before
	}
	s.cancelLocked(context.Canceled)
	home := s.home
	if home == nil {
		s.mu.Unlock()
		return
	}
	s.home = nil
	s.renewLocked()
	s.mu.Unlock()
	s.renewRest()
	home.Store(s) // a spare the driver may already have is dropped
}

// releaseWatched is release for a winner whose call's context is watched (see detach): the
// first call stops the watch and releases generation gen if it stopped the watch before it
// went off; otherwise, and on later calls, it only cancels generation gen.
func (s *attemptState) releaseWatched(gen uint32) {
	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return // released before
	}
	stop := s.watch
	s.watch = nil
	s.mu.Unlock()
	if stop != nil && stop() {
		s.release(gen)
	} else {
		s.cancelAt(gen, context.Canceled) // the watch went off, or Release ran before
	}
}

// cancelLocked is cancel with s.mu held.
func (s *attemptState) cancelLocked(err error) {
	if err == nil {
		err = context.Canceled
	}
	if s.err != nil {
		return
	}
	s.err = err
	if s.done == nil {
		s.done = closedChan
	} else {
		close(s.done)
	}
	for _, r := range s.after {
		go r.f()
	}
	s.dropAfter()
}

// dropAfter forgets every registration, keeping nothing the attempt registered alive. What
// unregister removed it cleared already, so a buffer whose registrations were all stopped
// (net/http's, on every request) needs no clearing.
func (s *attemptState) dropAfter() {
	if len(s.after) > 0 || cap(s.after) > len(s.afterBuf) {
		clear(s.afterBuf[:])
	}
	s.after = nil
}

// abandon cancels a losing attempt with err (its context's Err from then on). It reports
// whether the attempt's goroutine will see that it lost (and discard its own answer); false
// means its answer is already on its way to Do.
func (s *attemptState) abandon(err error) bool {
	s.lost = true
	s.cancel(err)
	return s.state.CompareAndSwap(attemptRunning, attemptAbandoned)
}

// renew readies a settled call's state for the next call's attempt: a new generation, so that
// the contexts of the call before see it no more, and nothing of that call's attempt left.
// The caller owns the state (no attempt of the call before is running).
func (s *attemptState) renew() {
	s.mu.Lock()
	s.renewLocked()
	s.mu.Unlock()
	s.renewRest()
}

// renewLocked is the part of renew done with s.mu held.
func (s *attemptState) renewLocked() {
	s.gen++
	s.started, s.muted, s.done, s.err, s.watch = false, false, nil, nil, nil
	if s.after != nil { // registrations left by an attempt that was not cancelled
		s.dropAfter()
	}
	if s.stopID != 0 {
		s.stop, s.stopID = nil, 0
		s.stopInc++
	}
	// Atomic stores cost more than loads; most calls left these as they were.
	if s.route.set.Load() != nil {
		s.route.set.Store(nil)
	}
	if s.route.i.Load() != 0 {
		s.route.i.Store(0)
	}
}

// renewRest is the part of renew that needs no lock: the fields the driver owns.
func (s *attemptState) renewRest() {
	s.state.Store(attemptRunning)
	if s.slow.Load() {
		s.slow.Store(false)
	}
	s.lost, s.received, s.inlineFirst = false, false, false
}

// discardLate runs discard for an answer that arrived after its call was over, on the
// attempt's own goroutine: a panic in it is recovered and dropped, as a late attempt's own
// panic is, since no caller is waiting to receive it and no goroutine Do started may crash
// the process.
func discardLate[T any](discard func(T, error), v T, err error) {
	defer func() { _ = recover() }()
	discard(v, err)
}
