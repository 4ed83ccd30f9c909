package hedge

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds an attempt as every driver runs it: the goroutine's body (attemptRun.run),
// and the attempt's context (attemptCtx), which carries its AttemptInfo, its start signal and
// its own cancellation.

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
