// Package limit is an adaptive concurrency limit: Netflix's Gradient2
// algorithm (from the concurrency-limits library), driven by explicit time.
//
// A [Gradient2] hands out permits while fewer than its limit are in flight
// and refuses the rest at once (there is no queue). Each finished call feeds
// its round-trip time back, and the limit follows the ratio of a long-term
// average RTT to the latest one: when calls slow down because the
// dependency queues them, the limit shrinks; when latency is at its baseline
// the limit grows by a small queue allowance per sample.
//
// Every method that depends on time takes it as an argument, so a simulator
// can drive the limit on a virtual clock: behaviour is a deterministic
// function of the calls and the times passed. No goroutines, no clock reads,
// no randomness.
//
// # The update rule
//
// For each sample (rtt, and inflight as it was when the permit was taken),
// with estimate the current limit as a real number:
//
//	long     = exponential average of rtt (plain mean over the first 10
//	           samples, then factor 2/(LongWindow+1))
//	if long/rtt > 2: the stored long average is multiplied by 0.95
//	           (fast recovery after a long overload; this sample still
//	           uses the undecayed value)
//	if inflight < estimate/2: no change (the caller, not the dependency,
//	           limits concurrency, so the RTT says nothing about the limit)
//	gradient = clamp(RTTTolerance * long / rtt, 0.5, 1)
//	next     = estimate*gradient + QueueSize
//	estimate = clamp(estimate*(1-Smoothing) + next*Smoothing, MinLimit, MaxLimit)
//	limit    = floor(estimate)
//
// This follows the original, including that a dropped call (overload,
// error) feeds its RTT like a success does: Gradient2 ignores the drop flag.
// The one departure: an rtt of zero or less (possible on a virtual clock) is
// taken as 1ns, where the original would divide by zero.
package limit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLimitExceeded is the error callers return when [Gradient2.Acquire]
// refuses a permit: the concurrency limit is reached.
var ErrLimitExceeded = errors.New("limit: limit exceeded")

// Outcome is how a call that held a permit ended.
type Outcome int

const (
	// Success feeds the call's RTT to the limit.
	Success Outcome = iota
	// Dropped is a call that failed or was refused for overload; its RTT
	// is fed to the limit as the original does with didDrop.
	Dropped
	// Ignored is a call whose RTT means nothing (a hedge loser cancelled
	// because another attempt won, a call the caller cancelled): the permit
	// is released and no sample is fed.
	Ignored
)

// String returns "success", "dropped" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Dropped:
		return "dropped"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Defaults used for zero fields of [Config]; they are the original's.
const (
	DefaultInitialLimit = 20
	DefaultMinLimit     = 20
	DefaultMaxLimit     = 200
	DefaultSmoothing    = 0.2
	DefaultRTTTolerance = 1.5
	DefaultLongWindow   = 600
	DefaultQueueSize    = 4
)

// warmup is the number of samples averaged plainly before the long RTT
// becomes an exponential average, as in the original: an exponential
// average seeded by one sample would remember it for hundreds of samples.
const warmup = 10

// Config configures a [Gradient2]. A zero field means the documented
// default, so the zero Config is Gradient2 with the original's defaults.
type Config struct {
	// InitialLimit is the limit before any sample. 0 means 20, raised to
	// MinLimit or lowered to MaxLimit if outside them; an explicit value
	// must lie in [MinLimit, MaxLimit].
	InitialLimit int
	// MinLimit is the lowest the limit goes. 0 means 20, or MaxLimit if
	// that is set lower.
	MinLimit int
	// MaxLimit is the highest the limit goes. 0 means 200, or MinLimit if
	// that is set higher; it must not be below MinLimit, nor above
	// math.MaxInt32.
	MaxLimit int

	// Smoothing is the weight of each new estimate against the current
	// limit, in (0, 1]: small values make the limit move slowly.
	// 0 means 0.2.
	Smoothing float64

	// RTTTolerance is how much slower than the long-term average a call may
	// be before the limit shrinks: 1.5 tolerates a 50% rise. It must be
	// >= 1. 0 means 1.5.
	RTTTolerance float64

	// LongWindow is the number of samples the long-term RTT average spans
	// (its exponential factor is 2/(LongWindow+1)). 0 means 600.
	LongWindow int

	// QueueSize is how much the limit may grow per sample while latency is
	// at its baseline. 0 means 4.
	QueueSize int

	// OnLimitChange, if not nil, is called whenever the integer limit
	// changes, with the time of the sample that changed it. It is called
	// outside any lock, so it may call the Gradient2; calls from concurrent
	// goroutines may arrive in any order, each with its own old and new.
	OnLimitChange func(old, new int, now time.Time)
}

// Validate reports whether c is a valid configuration, naming the first
// field that is not; the error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if c.InitialLimit < 0 {
		return invalid("limit: Config.InitialLimit must be >= 0, got %d", c.InitialLimit)
	}
	if c.MinLimit < 0 || c.MinLimit > math.MaxInt32 {
		return invalid("limit: Config.MinLimit must be in [0, %d], got %d", math.MaxInt32, c.MinLimit)
	}
	if c.MaxLimit < 0 || c.MaxLimit > math.MaxInt32 {
		return invalid("limit: Config.MaxLimit must be in [0, %d], got %d", math.MaxInt32, c.MaxLimit)
	}
	if math.IsNaN(c.Smoothing) || c.Smoothing < 0 || c.Smoothing > 1 {
		return invalid("limit: Config.Smoothing must be in (0, 1] (0 = default), got %v", c.Smoothing)
	}
	if c.RTTTolerance != 0 && (!(c.RTTTolerance >= 1) || math.IsInf(c.RTTTolerance, 0)) {
		return invalid("limit: Config.RTTTolerance must be >= 1 and finite (0 = default), got %v", c.RTTTolerance)
	}
	if c.LongWindow < 0 {
		return invalid("limit: Config.LongWindow must be >= 0, got %d", c.LongWindow)
	}
	if c.QueueSize < 0 {
		return invalid("limit: Config.QueueSize must be >= 0, got %d", c.QueueSize)
	}
	d := c.withDefaults()
	if d.MaxLimit < d.MinLimit {
		return invalid("limit: Config.MaxLimit must be >= MinLimit (%d), got %d", d.MinLimit, d.MaxLimit)
	}
	if c.InitialLimit != 0 && (c.InitialLimit < d.MinLimit || c.InitialLimit > d.MaxLimit) {
		return invalid("limit: Config.InitialLimit must be in [MinLimit, MaxLimit] = [%d, %d], got %d", d.MinLimit, d.MaxLimit, c.InitialLimit)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxLimit == 0 {
		c.MaxLimit = max(DefaultMaxLimit, c.MinLimit)
	}
	if c.MinLimit == 0 {
		c.MinLimit = min(DefaultMinLimit, c.MaxLimit)
	}
	if c.InitialLimit == 0 {
		c.InitialLimit = min(max(DefaultInitialLimit, c.MinLimit), c.MaxLimit)
	}
	if c.Smoothing == 0 {
		c.Smoothing = DefaultSmoothing
	}
	if c.RTTTolerance == 0 {
		c.RTTTolerance = DefaultRTTTolerance
	}
	if c.LongWindow == 0 {
		c.LongWindow = DefaultLongWindow
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	return c
}

// Permit is a slot under the limit, from [Gradient2.Acquire]. It is a small
// value recording when it was taken and how many permits were then in
// flight (counting itself). Release it exactly once; releasing the zero
// Permit does nothing.
type Permit struct {
	start    time.Time
	inflight int
	ok       bool
}

// Gradient2 is an adaptive concurrency limit. It must be built with [New].
// It is safe for concurrent use: taking and releasing a permit are atomic
// operations; only feeding a sample takes a short lock (the original's
// synchronized update).
type Gradient2 struct {
	cfg      Config
	inflight atomic.Int64
	limit    atomic.Int64

	mu       sync.Mutex
	estimate float64 // the limit as a real number
	long     expAvg  // long-term RTT in nanoseconds
	lastRTT  float64 // latest RTT in nanoseconds
}

// expAvg is an exponential moving average that starts as a plain mean over
// its first warmup samples.
type expAvg struct {
	value, sum float64
	count      int
	factor     float64
}

func (e *expAvg) add(x float64) float64 {
	if e.count < warmup {
		e.count++
		e.sum += x
		e.value = e.sum / float64(e.count)
	} else {
		e.value = e.value*(1-e.factor) + x*e.factor
	}
	return e.value
}

// New returns a Gradient2 configured by cfg, or the error of cfg.Validate.
func New(cfg Config) (*Gradient2, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &Gradient2{cfg: cfg, estimate: float64(cfg.InitialLimit)}
	g.long.factor = 2 / (float64(cfg.LongWindow) + 1)
	g.limit.Store(int64(cfg.InitialLimit))
	return g, nil
}

// Acquire takes a permit at now if fewer than Limit are in flight, and
// reports false otherwise (the caller fails the attempt with
// [ErrLimitExceeded]). It never waits.
func (g *Gradient2) Acquire(now time.Time) (Permit, bool) {
	for {
		n := g.inflight.Load()
		if n >= g.limit.Load() {
			return Permit{}, false
		}
		if g.inflight.CompareAndSwap(n, n+1) {
			return Permit{start: now, inflight: int(n + 1), ok: true}, true
		}
	}
}

// Release gives back a permit at now. Success and Dropped feed the sample
// (rtt = now - the permit's start, and the in-flight count at acquire) to
// the limit; Ignored only frees the permit.
func (g *Gradient2) Release(now time.Time, p Permit, o Outcome) {
	if !p.ok {
		return
	}
	g.inflight.Add(-1)
	if o != Success && o != Dropped {
		return
	}
	g.sample(now, now.Sub(p.start), p.inflight)
}

// sample feeds one observation to the update rule (see the package doc).
func (g *Gradient2) sample(now time.Time, rtt time.Duration, inflight int) {
	if rtt <= 0 {
		rtt = 1
	}
	short := float64(rtt)

	g.mu.Lock()
	old := int(g.estimate)
	g.lastRTT = short
	long := g.long.add(short)
	if long/short > 2 {
		g.long.value *= 0.95
	}
	if float64(inflight) < g.estimate/2 {
		g.mu.Unlock()
		return
	}
	c := &g.cfg
	gradient := max(0.5, min(1, c.RTTTolerance*long/short))
	next := g.estimate*gradient + float64(c.QueueSize)
	next = g.estimate*(1-c.Smoothing) + next*c.Smoothing
	g.estimate = max(float64(c.MinLimit), min(float64(c.MaxLimit), next))
	nl := int(g.estimate)
	g.limit.Store(int64(nl))
	g.mu.Unlock()

	if nl != old && c.OnLimitChange != nil {
		c.OnLimitChange(old, nl, now)
	}
}

// Limit returns the current concurrency limit.
func (g *Gradient2) Limit() int { return int(g.limit.Load()) }

// InFlight returns the number of permits taken and not yet released.
func (g *Gradient2) InFlight() int { return int(g.inflight.Load()) }

// LongRTT returns the long-term RTT average the limit compares each sample
// with (0 before the first sample).
func (g *Gradient2) LongRTT() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.long.value)
}

// ErrInvalidConfig is wrapped by every error from [Config.Validate] and [New].
var ErrInvalidConfig = errors.New("limit: invalid Config")

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

func invalid(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}
