// Package budget bounds how much extra work retries and hedges may add, with
// the semantics of Finagle's RetryBudget: within a trailing window,
//
//	withdrawals <= Ratio × deposits + MinPerSecond × Window-in-seconds
//
// Every call deposits once; every retry or hedge withdraws once. Ratio is the
// fraction of extra load the budget allows while traffic flows; the reserve
// (MinPerSecond × Window) lets a service with little traffic retry at all.
// Because retries and hedges spend the same [Budget], a dependency that fails
// cannot be hit by a retry storm and a hedge storm at once.
//
// The bound is exact, also under concurrency: the balance is one atomic
// integer, and a withdrawal takes from it with compare-and-swap, never with a
// load, a comparison and an add that two goroutines could interleave.
package budget

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of [Config].
const (
	DefaultRatio        = 0.10
	DefaultMinPerSecond = 1.0
	DefaultWindow       = 10 * time.Second
)

// Zero asks for exactly zero in Ratio or MinPerSecond, whose zero value
// selects the default: Config{Ratio: budget.Zero} allows the reserve alone,
// Config{MinPerSecond: budget.Zero} has no reserve. Any value at or below
// Zero counts as zero.
const Zero = 1e-12

// Limits on [Config] fields.
const (
	MaxRatio      = 1000
	MinimumWindow = time.Second
	// MaxReserve bounds MinPerSecond × Window-in-seconds, the withdrawals
	// always available, so that the balance fits its fixed-point integer.
	MaxReserve = 1e9
)

const (
	// unit is one withdrawal in the fixed-point balance, so Ratio and the
	// reserve are applied to within 1/10000 of a withdrawal. Integers make
	// the bound exact: floating-point sums drift and cannot be
	// compare-and-swapped.
	unit = 10000

	// numSlots is how many time slots cover the window: deposits and
	// withdrawals leave the window in steps of Window/numSlots.
	numSlots = 20

	// A slot is one atomic word: the low valueBits hold the slot's net
	// contribution to the balance (signed), the high tagBits the low bits
	// of the epoch it belongs to. The compare-and-swap that rolls a slot over
	// to a new epoch thus reads exactly the value that leaves the window.
	valueBits = 44
	tagBits   = 64 - valueBits
	tagMask   = 1<<tagBits - 1
	valueMask = 1<<valueBits - 1
	maxValue  = 1<<(valueBits-1) - 1
	minValue  = -(1 << (valueBits - 1))
)

// ErrInvalidConfig is wrapped by every error from [Config.Validate] and [New].
var ErrInvalidConfig = errors.New("budget: invalid Config")

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

func invalid(format string, args ...any) error {
	return &configError{msg: "budget: " + fmt.Sprintf(format, args...)}
}

// Config configures a [Budget]. A zero field selects its default, so the zero
// Config is the default budget: 10% of calls plus 1 per second, over 10
// seconds. A budget without limit must be asked for with Off.
type Config struct {
	// Ratio is how many withdrawals each deposit allows. 0 means 0.10; write
	// Zero for none (a reserve-only budget). It must be in [0, 1000] and is
	// applied to within 0.0001.
	Ratio float64

	// MinPerSecond is the reserve: withdrawals per second of Window that are
	// always available, even with no deposits, so that a service with little
	// traffic can still retry. 0 means 1; write Zero for none. It must be
	// >= 0, and MinPerSecond × Window-in-seconds at most MaxReserve.
	MinPerSecond float64

	// Window is the trailing window deposits and withdrawals count in.
	// 0 means 10s. It must be 0 or at least 1s. Both leave the window in steps
	// of Window/20: each counts for at least 19/20 of Window and never longer
	// than Window.
	Window time.Duration

	// Off turns the budget off: every withdrawal succeeds. The other
	// fields are still validated, and otherwise ignored.
	Off bool
}

// Validate reports the first field that breaks its rule. The error names the
// field and the rule and wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if !(c.Ratio >= 0 && c.Ratio <= MaxRatio) {
		return invalid("Config.Ratio must be in [0, %d], got %v", MaxRatio, c.Ratio)
	}
	if !(c.MinPerSecond >= 0) || math.IsInf(c.MinPerSecond, 1) {
		return invalid("Config.MinPerSecond must be >= 0 and finite, got %v", c.MinPerSecond)
	}
	if c.Window < 0 {
		return invalid("Config.Window must be >= 0, got %v", c.Window)
	}
	if c.Window != 0 && c.Window < MinimumWindow {
		return invalid("Config.Window must be 0 (default %v) or at least %v, got %v",
			DefaultWindow, MinimumWindow, c.Window)
	}
	r := c.withDefaults()
	if reserve := r.MinPerSecond * r.Window.Seconds(); reserve > MaxReserve {
		return invalid("Config.MinPerSecond × Window must be at most %g withdrawals, got %g",
			float64(MaxReserve), reserve)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Ratio == 0 {
		c.Ratio = DefaultRatio
	}
	if c.MinPerSecond == 0 {
		c.MinPerSecond = DefaultMinPerSecond
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	return c
}

// toUnits converts withdrawals to fixed-point units; values at or below Zero
// are exactly zero.
func toUnits(v float64) int64 {
	if v <= Zero {
		return 0
	}
	return int64(math.Round(v * unit))
}

// A Budget is a shared allowance of retries and hedges. Build one per policy
// and share it between every call: a Budget per call would always have its
// full reserve and bound nothing.
//
// A Budget must be built with [New]; the zero value panics on use. It is safe
// for concurrent use. Deposit and TryWithdraw are lock-free except when the
// time crosses into a new slot (every Window/20), when one caller takes a
// mutex to expire the slots that left the window.
//
// Time inside a Budget is measured from the first time any method is given,
// so two Budgets given the same sequence of calls decide the same way. Time
// does not run backwards for a Budget: a deposit dated more than a Window
// before the latest time it has seen has already expired and is ignored, and
// such a withdrawal is charged at the latest time, so that it counts for a
// whole window rather than none. Times that keep coming that far behind for a
// whole Window are the clock, and the latest time a stray (a bogus timestamp,
// a wall clock stepped back): the window moves back to them, empty.
type Budget struct {
	cfg       Config
	unlimited bool
	deposit   int64 // units per deposit
	reserve   int64 // units always available
	width     int64 // nanoseconds per slot

	// balance is reserve + the sum of the values of the live slots, in
	// units: withdrawals available × unit.
	balance atomic.Int64

	// head is the latest epoch whose expiry is complete: every slot holds
	// an epoch in (head-numSlots, head]. Only advance writes it, under mu,
	// after the slots are rolled.
	head atomic.Int64

	base atomic.Pointer[time.Time]

	// staleFrom is the first epoch of the current run of times more than a Window
	// behind the head (noStale when the latest time was not). A run that itself spans a
	// Window is the clock, and the head a stray: the window moves back to it.
	staleFrom atomic.Int64

	mu    sync.Mutex
	slots [numSlots]atomic.Uint64
}

// New returns a Budget for cfg, or an error wrapping [ErrInvalidConfig].
func New(cfg Config) (*Budget, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Budget{
		cfg:       cfg,
		unlimited: cfg.Off,
		deposit:   toUnits(cfg.Ratio),
		reserve:   toUnits(cfg.MinPerSecond * cfg.Window.Seconds()),
		width:     int64(cfg.Window) / numSlots,
	}
	b.balance.Store(b.reserve)
	b.staleFrom.Store(noStale)
	// Epoch 0 starts at the first time the Budget sees; the slots start out
	// holding the empty epochs just before it.
	for e := int64(-numSlots + 1); e <= 0; e++ {
		b.slots[slotOf(e)].Store(pack(e, 0))
	}
	return b, nil
}

// Config returns the configuration in use, with defaults filled in.
func (b *Budget) Config() Config { return b.cfg }

// Deposit records one call. Each call deposits once, whether or not it is
// retried or hedged, so that the budget grows with the traffic it protects.
func (b *Budget) Deposit(now time.Time) {
	if b.unlimited {
		return
	}
	ep, head := b.resolve(now)
	if b.deposit == 0 || ep <= head-numSlots {
		return // Ratio is Zero, or now is already outside the window
	}
	if n, r := b.add(ep, b.deposit); r == added {
		// The slot first, the balance second: in between, the balance
		// is short of the deposit, never ahead of it.
		b.balance.Add(n)
	}
}

// TryWithdraw takes one withdrawal for a retry or a hedge if the budget
// funds it, and reports whether it did. A refused withdrawal changes nothing.
func (b *Budget) TryWithdraw(now time.Time) bool {
	if b.unlimited {
		return true
	}
	ep, head := b.resolve(now)
	if ep <= head-numSlots {
		ep = head
	}
	// The balance first, the slot second: in between, the balance is short
	// of the withdrawal's expiry, never ahead of it.
	for {
		bal := b.balance.Load()
		if bal < unit {
			return false
		}
		if b.balance.CompareAndSwap(bal, bal-unit) {
			break
		}
	}
	for {
		switch _, r := b.add(ep, -unit); r {
		case added:
			return true
		case full:
			// More withdrawals in one slot than its word holds.
			b.balance.Add(unit)
			return false
		case expired:
			// The slot rolled over between the balance and now: charge
			// the latest epoch instead, whose slot is current once the
			// roll-over in progress (if any) is complete.
			b.mu.Lock()
			ep = b.head.Load()
			b.mu.Unlock()
		}
	}
}

// Balance returns the withdrawals available at now, in withdrawals, and can
// be fractional: the whole part is how many TryWithdraw calls would succeed
// if nothing else happened. It is math.Inf(1) for a
// budget that is Off. It never returns less than 0, even while withdrawals
// made on deposits that have since expired keep the budget in debt.
func (b *Budget) Balance(now time.Time) float64 {
	if b.unlimited {
		return math.Inf(1)
	}
	return float64(max(b.units(now), 0)) / unit
}

// units returns the raw balance at now, which can be negative.
//
// A read 292 years or more from the base (a reader's unset, zero time.Time beside a running
// budget) leaves the base alone, where resolve would move it and empty the window: each such
// read would forgive every withdrawal in it. Far behind, it reads the balance as it stands,
// which a withdrawal dated then would be charged against; far ahead, the empty window's
// reserve.
func (b *Budget) units(now time.Time) int64 {
	if p := b.base.Load(); p != nil {
		switch now.Sub(*p) {
		case math.MinInt64:
			return b.balance.Load()
		case math.MaxInt64:
			return b.reserve
		}
	}
	b.resolve(now)
	return b.balance.Load()
}

func (b *Budget) check() {
	if b.width == 0 {
		panic("budget: Budget used without New")
	}
}

// resolve returns the epoch of now and the head after expiring every slot
// that now pushes out of the window.
func (b *Budget) resolve(now time.Time) (ep, head int64) {
	p := b.base.Load()
	if p == nil {
		b.check()
		t := now
		b.base.CompareAndSwap(nil, &t)
		p = b.base.Load()
	}
	d := now.Sub(*p)
	if d == math.MaxInt64 || d == math.MinInt64 {
		// 292 years or more from the base (a zero time.Time, a stray): every
		// such time would share one epoch and nothing would ever expire.
		// Start over, empty, with now as the base.
		p = b.reanchor(p, now)
		d = now.Sub(*p)
	}
	ep = floorDiv(int64(d), b.width)
	head = b.head.Load()
	switch {
	case ep > head:
		head = b.advance(ep)
		b.clearStale()
	case ep > head-numSlots:
		b.clearStale()
	default:
		b.staleFrom.CompareAndSwap(noStale, ep)
		if from := b.staleFrom.Load(); from != noStale && ep-from >= numSlots {
			head = b.rebase(ep)
		}
	}
	return ep, head
}

const noStale = math.MinInt64

// clearStale ends a run of stale times; a load first, since almost every call has none to end.
func (b *Budget) clearStale() {
	if b.staleFrom.Load() != noStale {
		b.staleFrom.Store(noStale)
	}
}

// reanchor moves the base to now, emptying the window, unless another caller
// already moved it from old.
func (b *Budget) reanchor(old *time.Time, now time.Time) *time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.base.Load(); p != old {
		return p
	}
	b.emptyLocked(0)
	t := now
	b.base.Store(&t)
	return &t
}

// rebase moves the window back to end at ep, dropping every slot's value.
func (b *Budget) rebase(ep int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if head := b.head.Load(); ep > head-numSlots {
		return head
	}
	b.emptyLocked(ep)
	return ep
}

// emptyLocked makes the window end at ep with every slot's value dropped. b.mu must be held.
func (b *Budget) emptyLocked(ep int64) {
	for e := ep - numSlots + 1; e <= ep; e++ {
		s := &b.slots[slotOf(e)]
		for {
			w := s.Load()
			if s.CompareAndSwap(w, pack(e, 0)) {
				b.balance.Add(-unpack(w))
				break
			}
		}
	}
	b.head.Store(ep)
	b.staleFrom.Store(noStale)
}

// advance moves the head to ep, rolling every slot whose epoch leaves the
// window over to the epoch that replaces it, and taking its value out of the
// balance. It returns the new head.
func (b *Budget) advance(ep int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	head := b.head.Load()
	if ep <= head {
		return head
	}
	for e := max(head+1, ep-numSlots+1); e <= ep; e++ {
		s := &b.slots[slotOf(e)]
		for {
			w := s.Load()
			if s.CompareAndSwap(w, pack(e, 0)) {
				b.balance.Add(-unpack(w))
				break
			}
		}
	}
	b.head.Store(ep)
	return ep
}

type addResult int

const (
	added   addResult = iota // the value is in the slot
	expired                  // the slot has moved on to a later epoch
	full                     // the slot cannot hold the value
)

// add adds v units to the slot of epoch ep, which must not be newer than the
// head. Deposits that would overflow the slot are capped (a slot that full
// already funds hundreds of millions of withdrawals); the units actually
// added are returned.
//
// Tags hold only the low bits of an epoch, but a slot of an epoch in
// (head-numSlots, head] can only hold that epoch or a later one, so a
// matching tag means the same epoch unless the head jumps 2^20 epochs while
// this goroutine sits between two instructions.
func (b *Budget) add(ep, v int64) (int64, addResult) {
	s := &b.slots[slotOf(ep)]
	tag := uint64(ep) & tagMask
	for {
		w := s.Load()
		if w>>valueBits != tag {
			return 0, expired
		}
		cur := unpack(w)
		next := cur + v
		if next > maxValue {
			next = maxValue
		}
		if next < minValue {
			return 0, full
		}
		if s.CompareAndSwap(w, pack(ep, next)) {
			return next - cur, added
		}
	}
}

func pack(ep, v int64) uint64 {
	return (uint64(ep)&tagMask)<<valueBits | uint64(v)&valueMask
}

// unpack returns the signed value of a slot word.
func unpack(w uint64) int64 {
	return int64(w<<tagBits) >> tagBits
}

func slotOf(ep int64) int {
	i := ep % numSlots
	if i < 0 {
		i += numSlots
	}
	return int(i)
}

// floorDiv divides rounding towards negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
