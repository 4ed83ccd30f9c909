// Package breaker is a circuit breaker with explicit time.
//
// A [Breaker] is closed while the dependency looks healthy, opens when it
// trips (too many failures in a row, or too high a failure ratio over a
// sliding window), stays open for [Config.OpenFor], and then turns half-open,
// where a few trial calls decide whether it closes again or re-opens.
//
// Every method that depends on time takes it as an argument (like
// rate.Limiter.AllowN), so a simulator can drive a Breaker on a virtual clock:
// its behaviour is a deterministic function of the calls made and the times
// passed. It starts no goroutines, reads no clock (except [Breaker.Allow], a
// convenience for integrations) and uses no randomness.
//
// Besides admission, the breaker reports its windowed error rate and trip
// point ([Breaker.ErrorRate], [Breaker.TripPoint]) because "closed" is not
// "healthy": the hedging core stops hedging well before the breaker would
// trip, since extra copies sent to a failing dependency only add to its load.
package breaker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOpen is returned by [Breaker.Acquire] when the breaker is open, and when
// it is half-open and every trial permit is taken.
var ErrOpen = errors.New("breaker: open")

// State is the state of a [Breaker].
type State int32

const (
	// Closed admits every call and counts outcomes.
	Closed State = iota
	// Open refuses every call until [Config.OpenFor] has passed.
	Open
	// HalfOpen admits [Config.HalfOpenCalls] trial calls; all must succeed
	// for the breaker to close.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what happened to an admitted call.
type Outcome int

const (
	// Success is a call the dependency served well.
	Success Outcome = iota
	// Failure is a call the dependency failed (an error, a timeout, an
	// overload response): it counts towards tripping.
	Failure
	// Ignored is a call whose outcome says nothing about the dependency: a
	// hedge loser cancelled because another attempt won, or a call the
	// caller cancelled. It is not counted at all, but it gives back a
	// half-open trial permit so another trial can run.
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Defaults used for zero fields of [Config].
const (
	DefaultConsecutiveFailures = 5
	DefaultFailureRatio        = 0.5
	DefaultWindow              = 10 * time.Second
	DefaultMinimumCalls        = 20
	DefaultOpenFor             = 5 * time.Second
	DefaultHalfOpenCalls       = 1
	DefaultDegradedAt          = 0.5
)

// slots is the number of time slots the ratio window is divided into. Ten
// keeps the window's edge within a tenth of its length while the read
// (summing every slot) stays cheap.
const slots = 10

// Config configures a [Breaker]. A zero field means the documented default,
// so the zero Config is a sensible breaker.
type Config struct {
	// ConsecutiveFailures trips the breaker after this many failures in a
	// row (Ignored outcomes do not break a run, successes do).
	// 0 means 5; a negative value turns the rule off.
	ConsecutiveFailures int

	// FailureRatio trips the breaker when failures/calls over Window reaches
	// it, once the window holds MinimumCalls calls. 0 means 0.5; 1 trips only
	// when every call in the window failed; a negative value turns the rule
	// off. Values above 1 and NaN are invalid.
	FailureRatio float64

	// Window is the length of the sliding window of the ratio rule and of
	// [Breaker.ErrorRate]. It is kept as ten time slots, so the window in
	// force at any moment spans between 90% and 100% of Window.
	// 0 means 10s.
	Window time.Duration

	// MinimumCalls is the number of calls the window must hold before the
	// ratio rule can trip and before [Breaker.ErrorRate] reports itself
	// armed: a ratio over three calls is noise. 0 means 20.
	MinimumCalls int

	// OpenFor is how long the breaker stays open before it turns half-open
	// and lets trial calls through. 0 means 5s.
	OpenFor time.Duration

	// HalfOpenCalls is the number of trial calls admitted while half-open.
	// All of them must succeed for the breaker to close; any failure
	// re-opens it. 0 means 1.
	HalfOpenCalls int

	// DegradedAt is the error rate, as a share of the trip point, from which
	// [Breaker.Degraded] reports the dependency degraded while the breaker is
	// still closed: closed is not healthy. A hedge.Policy stops hedging there.
	// 0 means 0.5; 1 means only at the trip point. It must be in [0, 1].
	DegradedAt float64

	// OnStateChange, if not nil, is called on every state change with the
	// time of the call that caused it. It is called outside any lock, so it
	// may call the Breaker; calls from concurrent goroutines may arrive in
	// any order.
	OnStateChange func(from, to State, now time.Time)
}

// Validate reports whether c is a valid configuration, naming the first
// field that is not; the error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if math.IsNaN(c.FailureRatio) || c.FailureRatio > 1 {
		return invalid("breaker: Config.FailureRatio must be in [0, 1] or negative (rule off), got %v", c.FailureRatio)
	}
	if c.Window < 0 {
		return invalid("breaker: Config.Window must be >= 0, got %v", c.Window)
	}
	if c.MinimumCalls < 0 {
		return invalid("breaker: Config.MinimumCalls must be >= 0, got %d", c.MinimumCalls)
	}
	if c.OpenFor < 0 {
		return invalid("breaker: Config.OpenFor must be >= 0, got %v", c.OpenFor)
	}
	if c.HalfOpenCalls < 0 {
		return invalid("breaker: Config.HalfOpenCalls must be >= 0, got %d", c.HalfOpenCalls)
	}
	if !(c.DegradedAt >= 0 && c.DegradedAt <= 1) {
		return invalid("breaker: Config.DegradedAt must be in [0, 1] (0 = 0.5), got %v", c.DegradedAt)
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.FailureRatio == 0 {
		c.FailureRatio = DefaultFailureRatio
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinimumCalls == 0 {
		c.MinimumCalls = DefaultMinimumCalls
	}
	if c.OpenFor == 0 {
		c.OpenFor = DefaultOpenFor
	}
	if c.HalfOpenCalls == 0 {
		c.HalfOpenCalls = DefaultHalfOpenCalls
	}
	if c.DegradedAt == 0 {
		c.DegradedAt = DefaultDegradedAt
	}
	return c
}

// Ticket is the permission [Breaker.Acquire] hands out for one call; give it
// back with [Breaker.Release]. It is a small value: copy it freely, release
// it once. The zero Ticket belongs to no breaker state and its release is
// ignored.
type Ticket struct {
	gen   uint64 // the state episode it was issued in; 0 never matches
	trial bool
}

// Trial reports whether the ticket is a half-open trial call. The hedging
// core never hedges a trial: its outcome alone must decide the breaker.
func (t Ticket) Trial() bool { return t.trial }

// Breaker is a circuit breaker driven by explicit times. It must be built
// with [New]. It is safe for concurrent use; in the closed state Acquire is
// a single atomic load and Release records with atomic adds only.
type Breaker struct {
	cfg   Config
	width int64 // nanoseconds per window slot

	// state packs the State (low 2 bits) and a generation number that grows
	// on every state change, so a ticket issued in an earlier episode is
	// recognised and ignored, and the closed fast path needs one load.
	state atomic.Uint64

	// anchor is the first time the breaker saw; all times are kept as
	// nanoseconds since it (see ticks), which is safe for any time.Time,
	// including the zero one a simulator may start from.
	anchor atomic.Pointer[time.Time]

	consecutive atomic.Int64 // failures in a row while closed
	openUntil   atomic.Int64 // ticks at which an open breaker turns half-open
	openedAt    atomic.Int64 // ticks at which it opened

	ring [slots]slot

	// last is the slot number of the latest call record kept (emptyEpoch: none): the
	// present, which tells a slot claimed by a stray time far ahead from a current one.
	last atomic.Int64

	mu        sync.Mutex // serialises state changes and slot rotation
	issued    int        // half-open trial permits out
	succeeded int        // half-open trials that succeeded
}

// slot counts the calls of one time slot of the window.
type slot struct {
	epoch    atomic.Int64 // slot number (ticks / width) the counts belong to
	calls    atomic.Int64
	failures atomic.Int64
}

const emptyEpoch = math.MinInt64

// New returns a closed Breaker configured by cfg, or the error of
// cfg.Validate.
func New(cfg Config) (*Breaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Breaker{cfg: cfg}
	b.width = int64(cfg.Window / slots)
	if cfg.Window%slots != 0 {
		b.width++
	}
	for i := range b.ring {
		b.ring[i].epoch.Store(emptyEpoch)
	}
	b.last.Store(emptyEpoch)
	b.state.Store(pack(Closed, 1))
	return b, nil
}

func pack(s State, gen uint64) uint64 { return gen<<2 | uint64(s) }
func stateOf(w uint64) State          { return State(w & 3) }
func genOf(w uint64) uint64           { return w >> 2 }

// ticks converts now to nanoseconds since the breaker's anchor.
func (b *Breaker) ticks(now time.Time) int64 {
	a, d := b.since(now)
	if d == math.MaxInt64 || d == math.MinInt64 {
		d = b.reanchor(a, now)
	}
	return int64(d)
}

// readTicks is ticks for a reader, which must change nothing: a time 292 years or more
// from the anchor (a reader's unset, zero time.Time beside a running breaker) keeps the
// anchor and reads as the saturated tick, in no window, before or after every OpenFor.
func (b *Breaker) readTicks(now time.Time) int64 {
	_, d := b.since(now)
	return int64(d)
}

// since returns the anchor, set to now if there is none yet, and now less it.
func (b *Breaker) since(now time.Time) (*time.Time, time.Duration) {
	a := b.anchor.Load()
	if a == nil {
		t := now
		if !b.anchor.CompareAndSwap(nil, &t) {
			a = b.anchor.Load()
		} else {
			a = &t
		}
	}
	return a, now.Sub(*a)
}

// reanchor moves the anchor to now when now is 292 years or more from it (a
// zero time.Time, a stray), where every tick would saturate to one value: the
// window starts empty and an open breaker stays open OpenFor from now.
func (b *Breaker) reanchor(old *time.Time, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.anchor.Load(); a != old {
		return now.Sub(*a)
	}
	for i := range b.ring {
		s := &b.ring[i]
		s.epoch.Store(emptyEpoch)
		s.calls.Store(0)
		s.failures.Store(0)
	}
	b.last.Store(emptyEpoch)
	t := now
	b.anchor.Store(&t)
	if stateOf(b.state.Load()) == Open {
		b.openedAt.Store(0)
		b.openUntil.Store(int64(b.cfg.OpenFor))
	}
	return 0
}

// floorDiv divides rounding towards negative infinity, so times before the
// anchor fall in their own slots.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// transition is a state change to report once the lock is released.
type transition struct {
	from, to State
	now      time.Time
	ok       bool
}

func (b *Breaker) notify(tr transition) {
	if tr.ok && b.cfg.OnStateChange != nil {
		b.cfg.OnStateChange(tr.from, tr.to, tr.now)
	}
}

// Acquire asks to make a call at now. It returns [ErrOpen] while the breaker
// is open, or half-open with every trial permit taken. Otherwise the call
// may go ahead and its ticket must be given back with [Breaker.Release].
//
// An open breaker whose OpenFor has passed turns half-open here, and
// [Config.OnStateChange] hears of it before Acquire returns; if it panics, the
// panic leaves Acquire with no ticket taken.
func (b *Breaker) Acquire(now time.Time) (Ticket, error) {
	w := b.state.Load()
	if stateOf(w) == Closed {
		return Ticket{gen: genOf(w)}, nil
	}
	return b.acquireSlow(now, w)
}

func (b *Breaker) acquireSlow(now time.Time, w uint64) (Ticket, error) {
	tk := b.ticks(now)
	if stateOf(w) == Open && b.stillOpen(tk) {
		return Ticket{}, ErrOpen
	}
	b.mu.Lock()
	tr := b.maybeHalfOpenLocked(now, tk)
	w = b.state.Load()
	var t Ticket
	err := ErrOpen
	switch stateOf(w) {
	case Closed:
		t, err = Ticket{gen: genOf(w)}, nil
	case HalfOpen:
		if b.issued < b.cfg.HalfOpenCalls {
			b.issued++
			t, err = Ticket{gen: genOf(w), trial: true}, nil
		}
	}
	b.mu.Unlock()
	if t.trial {
		// OnStateChange runs user code: should it panic, the panic leaves Acquire and the
		// caller never holds the ticket, so its trial permit is given back on the way out.
		// Otherwise the breaker would stay half-open with its permits taken by no one,
		// refusing every call for good.
		notified := false
		defer func() {
			if !notified {
				b.releaseTrial(now, t, Ignored)
			}
		}()
		b.notify(tr)
		notified = true
		return t, err
	}
	b.notify(tr)
	return t, err
}

// stillOpen reports whether an open breaker is still within OpenFor at tk. A
// tk before the time it opened is a clock stepped back: OpenFor runs again
// from tk, rather than until the old clock's time comes back.
func (b *Breaker) stillOpen(tk int64) bool {
	if tk >= b.openUntil.Load() {
		return false
	}
	if tk < b.openedAt.Load() {
		b.mu.Lock()
		if tk < b.openedAt.Load() && stateOf(b.state.Load()) == Open {
			u := tk + int64(b.cfg.OpenFor)
			if u < tk {
				u = math.MaxInt64
			}
			b.openUntil.Store(u)
			b.openedAt.Store(tk)
		}
		b.mu.Unlock()
	}
	return true
}

// maybeHalfOpenLocked turns an open breaker half-open once OpenFor has
// passed. b.mu must be held.
func (b *Breaker) maybeHalfOpenLocked(now time.Time, tk int64) transition {
	w := b.state.Load()
	if stateOf(w) != Open || tk < b.openUntil.Load() {
		return transition{}
	}
	b.issued, b.succeeded = 0, 0
	b.state.Store(pack(HalfOpen, genOf(w)+1))
	return transition{from: Open, to: HalfOpen, now: now, ok: true}
}

// Release gives back a ticket from [Breaker.Acquire] with the outcome of its
// call, finished at now. Release each ticket exactly once: a ticket is a
// plain value and a second release would count the call twice. Tickets issued before the latest state change are
// ignored: a call admitted while closed says nothing about a breaker that
// has since opened.
func (b *Breaker) Release(now time.Time, t Ticket, o Outcome) {
	w := b.state.Load()
	if genOf(w) != t.gen {
		return
	}
	if t.trial {
		b.releaseTrial(now, t, o)
		return
	}
	switch o {
	case Success:
		b.record(b.ticks(now), false)
		if b.consecutive.Load() != 0 {
			b.consecutive.Store(0)
		}
	case Failure:
		tk := b.ticks(now)
		b.record(tk, true)
		run := b.consecutive.Add(1)
		if b.shouldTrip(tk, run) {
			b.trip(now, tk, t.gen)
		}
	}
}

func (b *Breaker) shouldTrip(tk, run int64) bool {
	if n := b.cfg.ConsecutiveFailures; n > 0 && run >= int64(n) {
		return true
	}
	if r := b.cfg.FailureRatio; r >= 0 {
		calls, failures := b.sum(tk)
		if calls >= int64(b.cfg.MinimumCalls) && float64(failures) >= r*float64(calls) {
			return true
		}
	}
	return false
}

// trip opens a closed breaker, if it is still in episode gen.
func (b *Breaker) trip(now time.Time, tk int64, gen uint64) {
	b.mu.Lock()
	w := b.state.Load()
	if stateOf(w) != Closed || genOf(w) != gen {
		b.mu.Unlock()
		return
	}
	b.openLocked(tk, w)
	b.mu.Unlock()
	b.notify(transition{from: Closed, to: Open, now: now, ok: true})
}

// openLocked moves to Open from the state word w. The window is kept so
// that ErrorRate still shows why the breaker opened. b.mu must be held.
func (b *Breaker) openLocked(tk int64, w uint64) {
	u := tk + int64(b.cfg.OpenFor)
	if u < tk {
		u = math.MaxInt64
	}
	b.openUntil.Store(u)
	b.openedAt.Store(tk)
	b.consecutive.Store(0)
	b.state.Store(pack(Open, genOf(w)+1))
}

func (b *Breaker) releaseTrial(now time.Time, t Ticket, o Outcome) {
	tk := b.ticks(now)
	b.mu.Lock()
	w := b.state.Load()
	if genOf(w) != t.gen || stateOf(w) != HalfOpen {
		b.mu.Unlock()
		return
	}
	var tr transition
	switch o {
	case Ignored:
		if b.issued > 0 {
			b.issued--
		}
	case Success:
		b.succeeded++
		if b.succeeded >= b.cfg.HalfOpenCalls {
			b.closeLocked(w)
			tr = transition{from: HalfOpen, to: Closed, now: now, ok: true}
		}
	case Failure:
		b.openLocked(tk, w)
		tr = transition{from: HalfOpen, to: Open, now: now, ok: true}
	}
	b.mu.Unlock()
	b.notify(tr)
}

// closeLocked moves to Closed with a fresh window: the failures that opened
// the breaker belong to an episode the trials have just declared over.
// b.mu must be held.
func (b *Breaker) closeLocked(w uint64) {
	for i := range b.ring {
		s := &b.ring[i]
		s.epoch.Store(emptyEpoch)
		s.calls.Store(0)
		s.failures.Store(0)
	}
	b.consecutive.Store(0)
	b.issued, b.succeeded = 0, 0
	b.state.Store(pack(Closed, genOf(w)+1))
}

// record counts one call (and a failure, if failed) in the slot of tk.
func (b *Breaker) record(tk int64, failed bool) {
	ep := floorDiv(tk, b.width)
	s := &b.ring[int(ep-floorDiv(ep, slots)*slots)]
	if e := s.epoch.Load(); e != ep {
		if e > ep && !b.strayAhead(e, ep) {
			// The slot already holds a later period: this call is at
			// least a full window late and no longer in any window.
			return
		}
		b.mu.Lock()
		// Counters are cleared before the epoch is published, so a
		// lock-free writer that sees the new epoch adds to clean counters.
		if e := s.epoch.Load(); e < ep || e > ep && b.strayAhead(e, ep) {
			s.calls.Store(0)
			s.failures.Store(0)
			s.epoch.Store(ep)
		} else if e > ep {
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
	s.calls.Add(1)
	if failed {
		s.failures.Add(1)
	}
	if b.last.Load() != ep {
		b.last.Store(ep)
	}
}

// strayAhead reports whether slot period e, later than the period ep of a call, was
// claimed by a stray time far ahead rather than by the present: e is more than a window
// past ep and past the latest call kept, and ep is within a window of that latest call.
// Kept, such a slot would drop the calls of one slot of every window until the clock
// caught up with the stray. A call a window late finds its slot taken by a period no later
// than the latest call's, and is still dropped. (Differences in uint64: e > ep, and width
// 1ns makes periods span the whole int64 range.)
func (b *Breaker) strayAhead(e, ep int64) bool {
	last := b.last.Load()
	if last == emptyEpoch || e <= last || uint64(e)-uint64(ep) <= slots {
		return false
	}
	return ep >= last || uint64(last)-uint64(ep) < slots
}

// sum adds up the slots inside the window ending at tk.
//
// A slot's two counters are not one atomic value, so a read concurrent with writers must
// not let failures exceed calls (an ErrorRate above 1, a ratio rule tripping on failures
// that were never calls). failures is loaded before calls: record adds to calls first, so
// every failure seen has its call seen too. That leaves a slot rotated between the two
// loads, or a writer that loaded the old period's epoch and, preempted between its two
// adds, added its failure after the rotation cleared the counters (a failure with no
// call in the new period): each slot's failures are capped at its calls.
func (b *Breaker) sum(tk int64) (calls, failures int64) {
	if tk == math.MaxInt64 || tk == math.MinInt64 {
		return 0, 0 // a read 292 years or more from the anchor (readTicks): no window holds it
	}
	ep := floorDiv(tk, b.width)
	for i := range b.ring {
		s := &b.ring[i]
		e := s.epoch.Load()
		if e > ep-slots && e <= ep {
			f := s.failures.Load()
			c := s.calls.Load()
			calls += c
			failures += min(f, c)
		}
	}
	return calls, failures
}

// Allow is a two-step form of Acquire and Release for integrations that
// cannot wrap the call in a closure; it reads the clock with time.Now. Call
// done exactly once with the outcome; further calls do nothing.
func (b *Breaker) Allow() (done func(Outcome), err error) {
	t, err := b.Acquire(time.Now())
	if err != nil {
		return nil, err
	}
	var once atomic.Bool
	return func(o Outcome) {
		if once.CompareAndSwap(false, true) {
			b.Release(time.Now(), t, o)
		}
	}, nil
}

// State returns the state at now. An open breaker whose OpenFor has passed
// turns half-open here, as it would on the next Acquire.
func (b *Breaker) State(now time.Time) State {
	w := b.state.Load()
	if stateOf(w) != Open {
		return stateOf(w)
	}
	tk := b.ticks(now)
	if b.stillOpen(tk) {
		return Open
	}
	b.mu.Lock()
	tr := b.maybeHalfOpenLocked(now, tk)
	s := stateOf(b.state.Load())
	b.mu.Unlock()
	b.notify(tr)
	return s
}

// Peek returns the state at now as [Breaker.State] does, without changing it: an open
// breaker whose OpenFor has passed reads half-open, but turns half-open (and tells
// OnStateChange) only at the next State or Acquire. It is for readers that drive no call,
// such as a metrics exporter.
func (b *Breaker) Peek(now time.Time) State {
	s := stateOf(b.state.Load())
	if s == Open && b.readTicks(now) >= b.openUntil.Load() {
		return HalfOpen
	}
	return s
}

// ErrorRate reports failures/calls over the window ending at now, and
// whether the window holds at least MinimumCalls calls and at least two
// failures. [Breaker.Degraded], which the hedging core asks before each hedge,
// acts only when armed: one failure, or a handful of calls, is not a trend. The
// window restarts empty each time the breaker closes.
func (b *Breaker) ErrorRate(now time.Time) (rate float64, armed bool) {
	calls, failures := b.sum(b.readTicks(now))
	if calls == 0 {
		return 0, false
	}
	return float64(failures) / float64(calls), calls >= int64(b.cfg.MinimumCalls) && failures >= 2
}

// Counts reports the calls and failures in the window ending at now.
func (b *Breaker) Counts(now time.Time) (calls, failures int) {
	c, f := b.sum(b.readTicks(now))
	return int(c), int(f)
}

// TripPoint returns the failure ratio at which the breaker trips, for gates
// that act at a fraction of it. When the ratio rule is off it returns 1: the
// ratio can never pass it, and a gate at a fraction of it still acts on the
// plain share of failed calls.
func (b *Breaker) TripPoint() float64 {
	if b.cfg.FailureRatio < 0 {
		return 1
	}
	return b.cfg.FailureRatio
}

// Degraded reports whether the error rate over the window ending at now has
// reached DegradedAt × [Breaker.TripPoint], once the window holds MinimumCalls
// calls and at least two failures ([Breaker.ErrorRate] armed): the dependency
// is failing often enough that extra load (a hedge) would hurt, though not yet
// often enough to trip.
func (b *Breaker) Degraded(now time.Time) bool {
	rate, armed := b.ErrorRate(now)
	return armed && rate >= b.cfg.DegradedAt*b.TripPoint()
}

// ErrInvalidConfig is wrapped by every error from [Config.Validate] and [New].
var ErrInvalidConfig = errors.New("breaker: invalid Config")

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

func invalid(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}
