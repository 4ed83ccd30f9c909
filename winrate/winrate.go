// Package winrate stops hedges when they stop winning.
//
// A hedge is a bet that the first attempt is slow by bad luck. When the
// dependency is slow for everyone (a brownout, a queue), the copy waits in
// the same queue and almost never wins: it only adds load. A [Loop] watches
// the share of started hedges that win and, when it falls below a floor,
// halves the fraction of would-be hedges allowed to start; when hedges win
// again it gives a quarter back at a time (multiplicative retreat, additive
// return, as in congestion control).
//
// # The rule
//
// Time is cut into decision periods of Window/4, counted from the first
// call. At the end of each period the loop looks at the hedges started and
// won since its last decision, within the trailing Window (the period just
// closed and up to three before it):
//
//   - fewer than MinimumSamples started: no opinion, no change; the counts
//     are kept for the next boundary until they fall out of the Window;
//   - won/started < Floor by more than chance explains (hedges winning
//     exactly Floor of the time would win this few less than one time in
//     200: the binomial's lower tail, computed exactly): the allowance
//     halves, never below MinimumAllowance;
//   - won/started ≥ Floor: the allowance grows by 0.25, up to 1;
//   - otherwise (short of Floor by no more than chance): no opinion yet,
//     the counts are kept, as with too few samples.
//
// After a decision its counts are spent: the next one judges new hedges
// only. When one period alone holds MinimumSamples hedges, each period is
// judged on its own; carrying the counts over a short run of quiet periods
// lets the loop still learn when a low allowance leaves few hedges per
// period, instead of sticking at its minimum.
//
// [Loop.Winning] says whether the last decision, within the Window, found
// hedges winning at least Floor of the time: a policy can hold back a hedge
// it has reason to doubt until the loop has seen hedges win.
//
// Admission is deterministic: each would-be hedge adds the allowance to a
// credit, and it starts when the credit reaches 1 (which then spends 1).
// Allowance 0.5 admits every second one, 0.25 every fourth.
//
// Every method takes the time explicitly, so a simulator can drive a Loop on
// a virtual clock; nothing reads a clock, starts a goroutine or draws a
// random number.
package winrate

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Defaults used for zero fields of [Config].
const (
	DefaultFloor            = 0.1
	DefaultWindow           = time.Minute
	DefaultMinimumSamples   = 10
	DefaultMinimumAllowance = 0.05
)

// periods is the number of decision periods in a Window.
const periods = 4

// Config configures a [Loop]. A zero field means the documented default.
type Config struct {
	// Floor is the share of started hedges that must win: a decision where
	// won/started < Floor (by more than chance explains) halves the allowance. At 0.1 a hedge that wins one
	// time in ten still pays for itself on the tail. In [0, 1]; 0 means 0.1.
	Floor float64

	// Window is the span the loop reacts over; a quarter of it is one
	// decision period. 0 means 1 minute; otherwise at least 4ns.
	Window time.Duration

	// MinimumSamples is the number of hedges started since the last
	// decision (within Window) before the loop has an opinion: a win rate
	// over three hedges is noise. 0 means 10.
	MinimumSamples int

	// MinimumAllowance is the lowest the allowance falls, so some hedges
	// always start and the loop can notice when they win again.
	// In [0, 1]; 0 means 0.05.
	MinimumAllowance float64
}

// Validate reports whether c is a valid configuration, naming the first
// field that is not; the error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if math.IsNaN(c.Floor) || c.Floor < 0 || c.Floor > 1 {
		return invalid("winrate: Config.Floor must be in [0, 1], got %v", c.Floor)
	}
	if c.Window < 0 || (c.Window > 0 && c.Window < periods) {
		return invalid("winrate: Config.Window must be 0 or >= 4ns, got %v", c.Window)
	}
	if c.MinimumSamples < 0 {
		return invalid("winrate: Config.MinimumSamples must be >= 0, got %d", c.MinimumSamples)
	}
	if math.IsNaN(c.MinimumAllowance) || c.MinimumAllowance < 0 || c.MinimumAllowance > 1 {
		return invalid("winrate: Config.MinimumAllowance must be in [0, 1], got %v", c.MinimumAllowance)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Floor == 0 {
		c.Floor = DefaultFloor
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinimumSamples == 0 {
		c.MinimumSamples = DefaultMinimumSamples
	}
	if c.MinimumAllowance == 0 {
		c.MinimumAllowance = DefaultMinimumAllowance
	}
	return c
}

// counts is what one decision period saw.
type counts struct{ started, won int64 }

// Loop is the win-rate loop of one policy. It must be built with [New]. It
// is safe for concurrent use (a short mutex: it is asked once per would-be
// hedge, not once per call).
type Loop struct {
	cfg    Config
	period time.Duration

	mu        sync.Mutex
	anchored  bool
	anchor    time.Time // start of period 0: the first time the loop saw
	cur       int64     // index of the current period
	now       counts    // the current period
	pending   [periods]counts
	next      int // ring position for the next closed period
	allowance float64
	credit    float64
	won       bool  // the last decision found hedges winning
	wonAt     int64 // the period that decision closed
}

// New returns a Loop configured by cfg, or the error of cfg.Validate. It
// starts with every would-be hedge allowed.
func New(cfg Config) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Loop{cfg: cfg, period: cfg.Window / periods, allowance: 1}, nil
}

// advance closes every period that ended by now. l.mu must be held.
func (l *Loop) advance(now time.Time) {
	if !l.anchored {
		l.anchored, l.anchor = true, now
		return
	}
	el := now.Sub(l.anchor)
	if el == math.MaxInt64 || el == math.MinInt64 {
		// 292 years or more from the anchor (a zero time.Time, a stray): re-anchor.
		l.anchor, l.cur, l.now, l.pending, l.won = now, 0, counts{}, [periods]counts{}, false
		return
	}
	idx := int64(el / l.period)
	if el < 0 && el%l.period != 0 {
		idx-- // floor: times before the anchor fall in their own periods
	}
	if idx < l.cur-periods {
		// The clock stepped back more than a Window (or an earlier call
		// was dated far ahead): take this time as the present.
		l.cur, l.now, l.pending = idx, counts{}, [periods]counts{}
		l.won = false
		return
	}
	if idx <= l.cur {
		// Not past the current period (or a clock read behind another
		// goroutine's): count it in the current period.
		return
	}
	// Closing more than periods+1 periods changes nothing more: by then
	// every kept count has fallen out of the Window. The closes made are the
	// first ones, each dated with the period it closes (a decision's wonAt).
	last := l.cur + min(idx-l.cur, periods+1)
	for ; l.cur < last; l.cur++ {
		l.close() // closes period l.cur
	}
	l.cur = idx
}

// close ends the current period and decides if it can. l.mu must be held.
func (l *Loop) close() {
	l.pending[l.next] = l.now
	l.next = (l.next + 1) % periods
	l.now = counts{}
	var sum counts
	for _, c := range l.pending {
		sum.started += c.started
		sum.won += c.won
	}
	if sum.started < int64(l.cfg.MinimumSamples) {
		return
	}
	switch {
	case short(sum, l.cfg.Floor):
		l.allowance = max(l.allowance/2, l.cfg.MinimumAllowance)
		l.won = false
	case float64(sum.won) >= l.cfg.Floor*float64(sum.started):
		l.allowance = min(l.allowance+0.25, 1)
		l.won, l.wonAt = true, l.cur
	default:
		return // short of Floor, but by no more than chance: no opinion yet, counts kept
	}
	l.pending = [periods]counts{}
}

// short reports whether the hedges c counts won less than floor of the time by more than
// chance explains: hedges that win exactly floor of the time would win c.won or fewer of
// c.started less often than falseAlarm (the binomial's lower tail). Without that margin a loop
// whose hedges win a little more often than floor halves its allowance on every unlucky period,
// and a client that sees ten or twenty hedges a period (a thin share of a fleet's traffic) is
// starved by noise: at floor 0.3 and a true win rate of 0.37, "none of ten won" happens one
// period in a hundred, and 32 such clients halve every few seconds between them. A loop whose
// hedges never win still retreats: no win in 15 hedges at floor 0.3 (in 51 at 0.1) is
// enough, and its shortfall grows with the hedges counted.
func short(c counts, floor float64) bool {
	if floor <= 0 || float64(c.won) >= floor*float64(c.started) {
		return false
	}
	if floor >= 1 {
		return true // every hedge had to win and one did not
	}
	return binomialTailBelow(c.won, c.started, floor, falseAlarm)
}

// binomialTailBelow reports whether P(X <= k) < alpha for X binomial with n trials of chance p,
// for 0 <= k < p*n and 0 < p < 1. It sums the terms from k downwards in log space (each smaller
// than the one above it, since k is below the mode), stopping once the sum reaches alpha or
// the terms no longer change it, so a large n costs a few dozen steps, not n.
func binomialTailBelow(k, n int64, p, alpha float64) bool {
	lgN, _ := math.Lgamma(float64(n) + 1)
	lgK, _ := math.Lgamma(float64(k) + 1)
	lgNK, _ := math.Lgamma(float64(n-k) + 1)
	logTerm := lgN - lgK - lgNK + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
	odds := math.Log1p(-p) - math.Log(p) // log of (1-p)/p
	sum := 0.0
	for i := k; i >= 0; i-- {
		term := math.Exp(logTerm)
		sum += term
		if sum >= alpha {
			return false
		}
		if term == 0 || term < sum*1e-12 {
			break
		}
		// term(i-1) / term(i) = i/(n-i+1) · (1-p)/p
		logTerm += math.Log(float64(i)/float64(n-i+1)) + odds
	}
	return true
}

// Admit reports whether a would-be hedge may start at now. Call it once per
// hedge the policy would otherwise start, and call [Loop.Started] if it then
// does.
func (l *Loop) Admit(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(now)
	l.credit += l.allowance
	// The tolerance absorbs rounding: twenty additions of 0.05 are
	// 0.9999999999999999, and that twentieth hedge should start.
	if l.credit >= 1-1e-9 {
		l.credit = max(l.credit-1, 0)
		return true
	}
	return false
}

// Started records that a hedge started at now.
func (l *Loop) Started(now time.Time) {
	l.mu.Lock()
	l.advance(now)
	l.now.started++
	l.mu.Unlock()
}

// Won records that a hedge won its race at now.
func (l *Loop) Won(now time.Time) {
	l.mu.Lock()
	l.advance(now)
	l.now.won++
	l.mu.Unlock()
}

// Allowance returns the fraction of would-be hedges that start at now, in
// [MinimumAllowance, 1].
func (l *Loop) Allowance(now time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(now)
	return l.allowance
}

// Floor is the share of started hedges that must win (Config.Floor, its default filled in).
func (l *Loop) Floor() float64 { return l.cfg.Floor }

// Winning reports whether the loop's last decision, made within the trailing Window, found
// hedges winning at least Floor of the time.
func (l *Loop) Winning(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance(now)
	return l.won && l.cur-l.wonAt <= periods
}

// ErrInvalidConfig is wrapped by every error from [Config.Validate] and [New].
var ErrInvalidConfig = errors.New("winrate: invalid Config")

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

func invalid(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// falseAlarm is the largest chance of halving on one decision that a loop whose hedges win
// exactly Floor of the time runs: one decision in 200.
const falseAlarm = 0.005
