package hedge

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

type triggerKind uint8

const (
	triggerNone triggerKind = iota
	triggerQuantile
	triggerAfter
	triggerTied
	triggerStartAware
)

// Trigger decides when a call is slow enough to send a hedge. The zero Trigger hedges
// nothing: the policy then only retries (when Attempts allows) and applies its breaker and
// limit.
type Trigger struct {
	kind  triggerKind
	q     float64
	delay time.Duration
}

// AtQuantile hedges a call once it has run longer than the live q-quantile of the policy's
// recent attempt latencies (Config.Window), clamped to [MinimumDelay, MaximumDelay]. It is the
// recommended trigger: when the dependency slows down the threshold moves with it, so the
// share of calls that hedge stays near 1-q instead of every call hedging in a brownout. It is
// silent until MinimumSamples latencies have been seen. q must be in [0.5, 1).
//
// By default it hedges only a first attempt the client can tell is being served, not queued
// (Config.MinimumInService), and not while latency shows a backlog (Config.BacklogRatio): a
// copy of a queued request waits behind it and only adds load.
func AtQuantile(q float64) Trigger { return Trigger{kind: triggerQuantile, q: q} }

// StartAware is AtQuantile for a dependency whose server says when it starts work on a
// request (an attempt calls [StartedService]; a driver calls Call.AttemptStartedService): it
// hedges a first attempt once it has been in service longer than the live q-quantile of
// attempt latencies, and never one the server has not reported as started, which is still
// queued. Time spent queued does not count, so a backlog does not turn into hedges. While the
// policy has seen no start signal within Config.Window it behaves exactly like
// AtQuantile(q), so a server that sends no signals still gets the client-only behaviour.
// q must be in [0.5, 1).
func StartAware(q float64) Trigger { return Trigger{kind: triggerStartAware, q: q} }

// After hedges a call once it has run for d, whatever the dependency's latency. Use it to
// reproduce published experiments, or when the latency distribution is known and fixed;
// [AtQuantile] adapts and is safer to leave on.
func After(d time.Duration) Trigger { return Trigger{kind: triggerAfter, delay: d} }

// Tied is tied requests (Dean & Barroso, "The Tail at Scale") for a dependency whose servers
// say when they start work on a request (an attempt calls [StartedService]; hedgehttp's
// Transport does when a hedgehttp.Queue sends its 1xx; a driver calls
// Call.AttemptStartedService). It dodges both causes of a slow call, each its own way:
//
//   - Queueing. While no copy of the call has started service, a tied copy goes to another
//     replica Config.TieDelay after the previous one was sent (up to MaximumConcurrent in
//     flight); the first copy to start cancels every copy still queued, which its server
//     drops without running. The delay is what makes ties cheap: a first copy that starts
//     at once has said so before its twin would be sent, and the twin is never sent. Sent at
//     once, both copies of an unqueued call usually start together, and one runs until the
//     cancellation reaches its server.
//   - A slow service (a straggler: a pause, a cold cache), which no tie can dodge once its
//     copy has started. A copy in service for longer than the live 0.95-quantile of attempt
//     latencies (clamped to [MinimumDelay, MaximumDelay], learnt as AtQuantile learns it) is
//     hedged to another replica, as [StartAware] hedges, when Attempts allows one more.
//
// A tie needs no threshold, so a cold estimator does not hold it back, and Tied runs no
// default backlog gate or win-rate loop (a backlog is what ties dodge, and a tie dropped from
// its queue costs the server nothing); a tie passes the other gates and spends the budget as
// any hedge does. Tied requests need that cancellation: where the server finishes a
// cancelled copy anyway, every tie is a whole second request, and only the budget bounds
// them. Against servers that send no start signal, nothing ever starts: every call sends its
// tied copy after TieDelay, and copies race as with After(TieDelay).
func Tied() Trigger { return Trigger{kind: triggerTied, q: tiedQuantile} }

// tiedQuantile is the latency quantile past which Tied hedges a copy in service: the
// recommended AtQuantile's.
const tiedQuantile = 0.95

// defaultTieDelay is Config.TieDelay's default: about twice a data-centre network's one-way
// delay, as Dean & Barroso suggest, so that a start signal sent the moment a copy arrives
// reaches the client before the twin would leave.
const defaultTieDelay = time.Millisecond

// ReadsStartSignals reports whether the trigger decides anything from the servers' start
// signals ([StartedService]): [Tied] does (and so does any trigger other than AtQuantile and
// After); AtQuantile and After hedge on latency alone. A transport asks its servers for the
// signal only when the trigger reads it: the signal costs every request a write on the
// server and a wake-up on the client.
func (t Trigger) ReadsStartSignals() bool {
	switch t.kind {
	case triggerNone, triggerQuantile, triggerAfter:
		return false
	}
	return true
}

// String describes the trigger, e.g. "AtQuantile(0.95)".
func (t Trigger) String() string {
	switch t.kind {
	case triggerQuantile:
		return fmt.Sprintf("AtQuantile(%g)", t.q)
	case triggerAfter:
		return fmt.Sprintf("After(%s)", t.delay)
	case triggerTied:
		return "Tied()"
	case triggerStartAware:
		return fmt.Sprintf("StartAware(%g)", t.q)
	}
	return "none"
}

// Backoff spaces sequential retries: the n-th retry waits Initial × Multiplier^(n-1), capped
// at Maximum, of which a random fraction Jitter is removed so that callers that failed
// together do not retry together.
type Backoff struct {
	Initial    time.Duration // 0 = 10ms
	Maximum    time.Duration // 0 = 1s
	Multiplier float64       // 0 = 2; must be >= 1
	Jitter     float64       // 0 = 0.5; in [0, 1]; negative = no jitter
}

// Saturation configures local-saturation detection: while this process is its own
// bottleneck, attempt latencies measure the process, not the dependency, so the estimator
// stops learning from them (a deep local queue would otherwise raise the threshold and hide an
// incident).
type Saturation struct {
	// SchedulerLatency is the scheduler latency (the 99th percentile of how long runnable
	// goroutines waited, since the previous reading) above which the process counts as
	// saturated. 0 = 5ms.
	SchedulerLatency time.Duration
	// Interval is how often the scheduler latency is read. 0 = 100ms.
	Interval time.Duration
	// Probe returns the current scheduler latency. nil = read runtime/metrics
	// (/sched/latencies:seconds). The simulator and tests set their own.
	Probe func() time.Duration
}

// Config is a policy's configuration. A zero field means the documented default, so
// Config{Trigger: AtQuantile(0.95)} is a complete, recommended configuration.
type Config struct {
	// Trigger decides when to hedge: AtQuantile(q) (recommended), StartAware(q), After(d) or
	// Tied(). Zero = no hedging.
	Trigger Trigger

	// Attempts is the most calls that reach the dependency for one call, whatever their shape:
	// the first, hedges and sequential retries all count. 0 = 2 with a Trigger (3 with Tied:
	// the first copy, its tie, and a hedge of whichever copy stays in service too long), 1
	// without. Hedging needs at least 2; at most [MaxAttempts]. An attempt that never reached
	// the dependency ([Outcome].Unsent) does not count: it is resent at once, besides, at
	// most Attempts times per call.
	Attempts int
	// MaximumConcurrent bounds how many attempts of one call are in flight at once, counting
	// the first. 0 = min(2, Attempts). Must not exceed Attempts.
	MaximumConcurrent int

	// Window is how far back the latency estimator looks (AtQuantile, StartAware, Tied).
	// 0 = 30s.
	Window time.Duration
	// MinimumSamples is how many latencies the estimator needs before AtQuantile hedges (and
	// before Tied hedges a copy in service; its ties need no threshold).
	// 0 = 20.
	MinimumSamples int
	// MinimumDelay is the lowest threshold AtQuantile (StartAware, Tied's copy in service)
	// will use. 0 = 10ms.
	MinimumDelay time.Duration
	// MaximumDelay is the highest threshold AtQuantile (StartAware, Tied's copy in service)
	// will use. 0 = no maximum.
	MaximumDelay time.Duration

	// TieDelay (Tied) is how long a copy may wait for its start signal before a tied copy is
	// sent to another replica. Set it to a little more than the round trip to the servers: a
	// start signal takes a round trip to arrive, and a tie sent before it could arrive is sent
	// for every call. 0 = 1ms; negative = send every tied copy at once, with the first.
	TieDelay time.Duration

	// MinimumInService: AtQuantile and StartAware hedge only a first attempt known to have
	// been in service, not queued, for at least this long; a copy of a queued request waits
	// behind it in the same queue and only adds load. Without start signals from the server
	// the client infers it: in a first-in-first-out server a call that a later call of the
	// same policy has overtaken (answered first) is in service, and the time since it was
	// first overtaken is a lower bound on its time in service (a busy client, whose timers
	// fire late, asks that much more). A call that nothing could have overtaken, because no
	// later call has started (a client with one call in flight at a time, or a thin share of
	// the traffic), is hedged on its age while the recent median is within 1.1 × its lowest:
	// no queue is forming, so it is a straggler. 0 = 10ms; negative = hedge on the attempt's
	// age alone, as After does. With StartAware and start signals, the server's word replaces
	// the inference.
	MinimumInService time.Duration
	// BacklogRatio pauses hedging (AtQuantile, StartAware) while the dependency is slow as a
	// whole rather than one call by bad luck: while the recent median latency (a streaming
	// estimate that follows a change within a few hundred answers) is above BacklogRatio × its
	// lowest over the last Window or two, by at least MinimumDelay/4 and beyond what this
	// process adds itself (a queue is forming; a busy client, whose timers fire late, moves its
	// own median with no queue anywhere), or while more than three times 1-q of the last
	// second's calls (at least 64 calls) reach their threshold (a slowdown the threshold,
	// learnt over Window, has not caught up with). Hedges would add load to all of it
	// (suppression reason "backlog"). 0 = 1.3; negative = off (both rules). Must be > 1
	// otherwise.
	BacklogRatio float64

	// Budget bounds hedges and retries together (Finagle's RetryBudget). The zero value is
	// the default budget: 10% of calls plus 1 per second, over 10s. Running without a budget
	// must be said: budget.Config{Unlimited: true}.
	Budget budget.Config

	// Backoff spaces sequential retries.
	Backoff Backoff

	// Classify turns an attempt's error into an Outcome. nil = [Classify].
	Classify func(error) Outcome

	// Breaker, when not nil, puts a circuit breaker in front of the dependency: an open
	// breaker fails calls fast with ErrBreakerOpen; a half-open trial is never hedged.
	Breaker *breaker.Config
	// SuppressAt stops hedging once the breaker's error rate reaches SuppressAt × its trip
	// point, long before it opens: closed is not healthy. 0 = 0.5; 1 = only when the breaker
	// opens. Needs Breaker.
	SuppressAt float64

	// Limit, when not nil, puts an adaptive concurrency limit (Gradient2) inside the hedge:
	// every attempt takes a permit; with none free the first attempt fails with
	// ErrLimitExceeded and a hedge is not sent.
	Limit *limit.Config

	// WinRate, when not nil, reduces the share of hedges sent while hedges stop winning.
	// nil = no loop with After and Tied; with AtQuantile and StartAware, the default loop
	// (winrate's defaults, Floor = MinimumWinRate).
	WinRate *winrate.Config
	// MinimumWinRate is the Floor of the default win-rate loop AtQuantile and StartAware run
	// when WinRate is nil: while fewer than this share of hedges win (by more than chance
	// explains: see the winrate package), the share of would-be hedges sent halves (down to
	// winrate's minimum), and it comes back a quarter at a time
	// once they win again. A hedge that seldom wins is not beating stragglers (the service has
	// none: exponential or bimodal service times) and only adds load. 0 = 0.3; negative = no
	// default loop. Must be <= 1.
	MinimumWinRate float64

	// Criticality opts in to the criticality gate: calls whose context carries Sheddable
	// are never hedged.
	Criticality bool

	// OverloadCooldown is how long hedging pauses after an attempt is classified as an
	// overload signal (a Retry-After, when longer, wins). 0 = 5s.
	OverloadCooldown time.Duration

	// LocalSaturation, when not nil, stops the estimator learning while this process is
	// saturated (high scheduler latency, or the adaptive limit full).
	LocalSaturation *Saturation

	// Observer receives every event of every call. nil = no events, at no cost. It runs
	// synchronously in the goroutine driving the call, so it must be fast and safe for
	// concurrent use.
	Observer func(Event)
}

// MaxAttempts is the largest Config.Attempts: each attempt costs the dependency a call and
// the caller memory, and past a handful more attempts only multiply load on a dependency
// that is failing (gRPC caps its retry and hedging policies at 5).
const MaxAttempts = 10

// ErrInvalidConfig is wrapped by every configuration error New returns.
var ErrInvalidConfig = errors.New("hedge: invalid config")

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// resolved is a Config with every default applied.
type resolved struct {
	Config
	attempts      int
	maxConcurrent int
	backoff       Backoff
	suppressAt    float64
	cooldown      time.Duration
	inService     time.Duration // 0 = no in-service evidence needed
	backlogRatio  float64       // 0 = no backlog gate
	minWinRate    float64       // 0 = no default win-rate loop
	tieDelay      time.Duration // Tied: 0 = tie at once
}

func (c Config) resolve() (resolved, error) {
	r := resolved{Config: c}
	hedging := c.Trigger.kind != triggerNone
	switch c.Trigger.kind {
	case triggerQuantile, triggerStartAware:
		if !(c.Trigger.q >= 0.5 && c.Trigger.q < 1) {
			name := "AtQuantile"
			if c.Trigger.kind == triggerStartAware {
				name = "StartAware"
			}
			return r, configError("Trigger: %s(q) needs q in [0.5, 1), got %v", name, c.Trigger.q)
		}
	case triggerAfter:
		if c.Trigger.delay < 0 {
			return r, configError("Trigger: After(d) needs d >= 0, got %v", c.Trigger.delay)
		}
	}
	switch {
	case c.TieDelay == 0:
		r.tieDelay = defaultTieDelay
	case c.TieDelay > 0:
		r.tieDelay = c.TieDelay
	}
	if c.Attempts < 0 || c.Attempts > MaxAttempts {
		return r, configError("Attempts must be in [0, %d] (0 = default), got %d", MaxAttempts, c.Attempts)
	}
	r.attempts = c.Attempts
	if r.attempts == 0 {
		r.attempts = 1
		if hedging {
			r.attempts = 2
		}
		if c.Trigger.kind == triggerTied {
			r.attempts = 3
		}
	}
	if hedging && r.attempts < 2 {
		return r, configError("Attempts must be >= 2 to hedge (Trigger is %v), got %d", c.Trigger, c.Attempts)
	}
	if c.MaximumConcurrent < 0 {
		return r, configError("MaximumConcurrent must be >= 0 (0 = default), got %d", c.MaximumConcurrent)
	}
	r.maxConcurrent = c.MaximumConcurrent
	if r.maxConcurrent == 0 {
		r.maxConcurrent = min(2, r.attempts)
	}
	if r.maxConcurrent > r.attempts {
		return r, configError("MaximumConcurrent (%d) must not exceed Attempts (%d)", r.maxConcurrent, r.attempts)
	}
	if c.Window < 0 {
		return r, configError("Window must be >= 0 (0 = 30s), got %v", c.Window)
	}
	if c.MinimumSamples < 0 {
		return r, configError("MinimumSamples must be >= 0 (0 = 20), got %d", c.MinimumSamples)
	}
	if c.MinimumDelay < 0 {
		return r, configError("MinimumDelay must be >= 0 (0 = 10ms), got %v", c.MinimumDelay)
	}
	if c.MaximumDelay < 0 {
		return r, configError("MaximumDelay must be >= 0 (0 = none), got %v", c.MaximumDelay)
	}
	if r.MinimumDelay == 0 {
		r.MinimumDelay = 10 * time.Millisecond
	}
	if c.MaximumDelay > 0 && c.MaximumDelay < r.MinimumDelay {
		return r, configError("MaximumDelay (%v) must be >= MinimumDelay (%v)", c.MaximumDelay, r.MinimumDelay)
	}
	if math.IsNaN(c.BacklogRatio) || (c.BacklogRatio > 0 && c.BacklogRatio <= 1) {
		return r, configError("BacklogRatio must be > 1 (0 = 1.3, negative = off), got %v", c.BacklogRatio)
	}
	if math.IsNaN(c.MinimumWinRate) || c.MinimumWinRate > 1 {
		return r, configError("MinimumWinRate must be <= 1 (0 = 0.3, negative = off), got %v", c.MinimumWinRate)
	}
	if adaptive := c.Trigger.kind == triggerQuantile || c.Trigger.kind == triggerStartAware; adaptive {
		switch {
		case c.WinRate != nil:
		case c.MinimumWinRate == 0:
			r.minWinRate = 0.3
		case c.MinimumWinRate > 0:
			r.minWinRate = c.MinimumWinRate
		}
		switch {
		case c.MinimumInService == 0:
			r.inService = 10 * time.Millisecond
		case c.MinimumInService > 0:
			r.inService = c.MinimumInService
		}
		switch {
		case c.BacklogRatio == 0:
			r.backlogRatio = 1.3
		case c.BacklogRatio > 0:
			r.backlogRatio = c.BacklogRatio
		}
	}
	b := c.Backoff
	if b.Initial < 0 || b.Maximum < 0 {
		return r, configError("Backoff.Initial and Backoff.Maximum must be >= 0, got %v and %v", b.Initial, b.Maximum)
	}
	if b.Multiplier != 0 && (b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0)) {
		return r, configError("Backoff.Multiplier must be >= 1 (0 = 2), got %v", b.Multiplier)
	}
	if b.Jitter > 1 || math.IsNaN(b.Jitter) {
		return r, configError("Backoff.Jitter must be <= 1 (0 = 0.5, negative = none), got %v", b.Jitter)
	}
	if b.Initial == 0 {
		b.Initial = 10 * time.Millisecond
	}
	if b.Maximum == 0 {
		b.Maximum = time.Second
	}
	if b.Multiplier == 0 {
		b.Multiplier = 2
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = 0.5
	case b.Jitter < 0:
		b.Jitter = 0
	}
	r.backoff = b
	if c.SuppressAt < 0 || c.SuppressAt > 1 || math.IsNaN(c.SuppressAt) {
		return r, configError("SuppressAt must be in [0, 1] (0 = 0.5), got %v", c.SuppressAt)
	}
	r.suppressAt = c.SuppressAt
	if r.suppressAt == 0 {
		r.suppressAt = 0.5
	}
	if c.OverloadCooldown < 0 {
		return r, configError("OverloadCooldown must be >= 0 (0 = 5s), got %v", c.OverloadCooldown)
	}
	r.cooldown = c.OverloadCooldown
	if r.cooldown == 0 {
		r.cooldown = 5 * time.Second
	}
	if s := c.LocalSaturation; s != nil && (s.SchedulerLatency < 0 || s.Interval < 0) {
		return r, configError("LocalSaturation.SchedulerLatency and .Interval must be >= 0")
	}
	if err := c.Budget.Validate(); err != nil {
		return r, fmt.Errorf("%w: Budget: %w", ErrInvalidConfig, err)
	}
	if c.Breaker != nil {
		if err := c.Breaker.Validate(); err != nil {
			return r, fmt.Errorf("%w: Breaker: %w", ErrInvalidConfig, err)
		}
	}
	if c.Limit != nil {
		if err := c.Limit.Validate(); err != nil {
			return r, fmt.Errorf("%w: Limit: %w", ErrInvalidConfig, err)
		}
	}
	if c.WinRate != nil {
		if err := c.WinRate.Validate(); err != nil {
			return r, fmt.Errorf("%w: WinRate: %w", ErrInvalidConfig, err)
		}
	}
	return r, nil
}
