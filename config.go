package hedge

import (
	"errors"
	"fmt"
	"time"

	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

// Config is a policy's configuration (docs/design.md, "Configuration"). A zero field means
// its documented default, so Config{Trigger: AtQuantile(0.95)} is a complete, recommended
// configuration. [Config.Validate] checks one without building a policy.
//
// One rule for off: what is on by default is turned off by saying [Off] — Off in a number
// ([Adaptive] MinimumInService, BacklogRatio, WinRate.Floor and TieDelay, Backoff.Jitter),
// Off: true in the Budget. What is off by default (Breaker, Limit, LocalSaturation,
// NeverHedgeSheddable) is turned on by setting it. Nil and zero never turn off something that
// is on by default, and no negative number other than Off means anything.
type Config struct {
	// Trigger decides when a call is slow enough to hedge: AtQuantile(q) (recommended),
	// StartAware(q), Tied() or After(d), each with its settings ([Adaptive]). Zero = never
	// hedge (the policy still retries, as Attempts allows).
	Trigger Trigger

	// Attempts is the most calls that reach the dependency for one call: the first, hedges
	// and retries all count. 0 = 2 with a Trigger (3 with Tied: the copy, its tie, a hedge of
	// the one that stays in service too long), 1 without; at most [MaxAttempts]. An attempt
	// that never reached the dependency ([Outcome].Unsent) does not count; it is resent.
	Attempts int
	// MaximumConcurrent bounds the attempts of one call in flight at once, the first
	// included. 0 = min(2, Attempts); at most Attempts, and with a Trigger at least 2 (a
	// hedge runs beside the attempt it copies). 1 without a Trigger: retries, one at a time.
	MaximumConcurrent int

	// Budget bounds hedges and retries together (Finagle's RetryBudget). Zero = 10% of calls
	// plus 1 per second, over 10s; budget.Config{Off: true} runs without one.
	Budget budget.Config
	// Backoff spaces sequential retries. Zero = 10ms doubling up to 1s, half of it jittered.
	Backoff Backoff
	// Classify turns an attempt's error into an Outcome. nil = [Classify].
	Classify func(error) Outcome

	// Breaker, when set, puts a circuit breaker in front of the dependency: open, it fails
	// calls fast with ErrBreakerOpen; half-open, its trial is never hedged; closed but
	// degraded (breaker.Config.DegradedAt), it stops hedges. nil = no breaker.
	Breaker *breaker.Config
	// Limit, when set, puts an adaptive concurrency limit (Gradient2) inside the hedge: every
	// attempt takes a permit; without one the first attempt fails with ErrLimitExceeded and a
	// hedge is not sent. nil = no limit.
	Limit *limit.Config
	// NeverHedgeSheddable turns on the criticality gate: a call whose context carries
	// Sheddable ([WithCriticality]) is never hedged. false = criticality is ignored.
	NeverHedgeSheddable bool
	// OverloadCooldown is how long hedging pauses after an attempt is classified as an
	// overload signal (a longer Retry-After wins). 0 = 5s.
	OverloadCooldown time.Duration
	// LocalSaturation, when set, stops the estimator learning while this process is its own
	// bottleneck: while the scheduler latency (the 99th percentile of how long runnable
	// goroutines waited, read from runtime/metrics every 100ms) is above LocalSaturation, or
	// the limit is full. Latencies then measure the process, not the dependency, and a deep
	// local queue would raise the threshold and hide an incident. 5ms is a good value.
	// 0 = always learn.
	LocalSaturation time.Duration

	// Observer receives every event of every call, synchronously in the goroutine driving
	// the call: it must be fast and safe for concurrent use. nil = no events, at no cost.
	Observer func(Event)
}

// Off turns off a setting that is on by default, wherever the setting is a number (see
// [Config]): Adaptive{BacklogRatio: hedge.Off}. It is the only negative number a setting of
// this package takes.
const Off = -1

// Backoff spaces sequential retries: the n-th retry waits Initial × Multiplier^(n-1), capped
// at Maximum, of which a random fraction Jitter is removed so that callers that failed
// together do not retry together. A retry whose wait (or the server's pushback) would end at
// or after the call's deadline is not made: the call fails at once, with
// [ErrNoTimeForRetry] as the cause, and spends no budget.
type Backoff struct {
	Initial    time.Duration // 0 = 10ms
	Maximum    time.Duration // 0 = 1s, or Initial if longer; must be >= Initial
	Multiplier float64       // 0 = 2; must be >= 1
	Jitter     float64       // 0 = 0.5; in [0, 1]; Off = no jitter
}

// MaxAttempts is the largest Config.Attempts: each attempt costs the dependency a call and
// the caller memory, and past a handful more attempts only multiply load on a dependency
// that is failing (gRPC caps its retry and hedging policies at 5).
const MaxAttempts = 10

// ErrInvalidConfig is wrapped by every error [Config.Validate] and [New] return.
var ErrInvalidConfig = errors.New("hedge: invalid config")

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// Validate reports whether c is a valid configuration, without building a policy: nil, or an
// error wrapping [ErrInvalidConfig] that names the first field that breaks its rule (e.g.
// "Trigger: Adaptive.BacklogRatio must be a finite number > 1"). [New] returns the same error.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

// resolved is a Config with every default applied, the trigger's settings included.
type resolved struct {
	Config
	estimate      // the adaptive triggers' and Tied's (zero for After)
	attempts      int
	maxConcurrent int
	backoff       Backoff
	cooldown      time.Duration
	inService     time.Duration   // 0 = no in-service evidence needed
	backlogRatio  float64         // 0 = no backlog gate
	winRate       *winrate.Config // nil = no win-rate loop
	tieDelay      time.Duration   // Tied: 0 = tie at once
	useDeadline   bool            // hedges fall due by the caller's deadline too
}

// resolve validates c and applies its defaults. Each step checks the fields of one concept.
func (c Config) resolve() (resolved, error) {
	r := resolved{Config: c}
	steps := []func(*resolved) error{
		resolveTrigger,
		resolveAttempts,
		resolveBackoff,
		resolveBlocks,
	}
	for _, step := range steps {
		if err := step(&r); err != nil {
			return r, err
		}
	}
	return r, nil
}

func resolveAttempts(r *resolved) error {
	c := r.Config
	hedging := c.Trigger.kind != triggerNone
	if c.Attempts < 0 || c.Attempts > MaxAttempts {
		return configError("Attempts must be in [0, %d] (0 = default), got %d", MaxAttempts, c.Attempts)
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
		return configError("Attempts must be >= 2 to hedge (Trigger is %v), got %d", c.Trigger, c.Attempts)
	}
	if c.MaximumConcurrent < 0 {
		return configError("MaximumConcurrent must be >= 0 (0 = default), got %d", c.MaximumConcurrent)
	}
	r.maxConcurrent = c.MaximumConcurrent
	if r.maxConcurrent == 0 {
		r.maxConcurrent = min(2, r.attempts)
	}
	if r.maxConcurrent > r.attempts {
		return configError("MaximumConcurrent (%d) must not exceed Attempts (%d)", r.maxConcurrent, r.attempts)
	}
	if hedging && r.maxConcurrent < 2 {
		// A hedge runs beside the attempt it copies: with one in flight at most, none would
		// ever start, and hedging would be off without a word.
		return configError("MaximumConcurrent must be >= 2 to hedge (Trigger is %v), got %d", c.Trigger, c.MaximumConcurrent)
	}
	if c.OverloadCooldown < 0 {
		return configError("OverloadCooldown must be >= 0 (0 = 5s), got %v", c.OverloadCooldown)
	}
	r.cooldown = orDefault(c.OverloadCooldown, 5*time.Second)
	return nil
}

func resolveBackoff(r *resolved) error {
	b := r.Backoff
	if b.Initial < 0 || b.Maximum < 0 {
		return configError("Backoff.Initial and Backoff.Maximum must be >= 0, got %v and %v", b.Initial, b.Maximum)
	}
	if b.Multiplier != 0 && !(b.Multiplier >= 1 && b.Multiplier <= maxFinite) {
		return configError("Backoff.Multiplier must be >= 1 (0 = 2), got %v", b.Multiplier)
	}
	if !(b.Jitter >= 0 && b.Jitter <= 1) && b.Jitter != Off {
		return configError("Backoff.Jitter must be in [0, 1] (0 = 0.5, Off = none), got %v", b.Jitter)
	}
	b.Initial = orDefault(b.Initial, 10*time.Millisecond)
	if b.Maximum > 0 && b.Maximum < b.Initial {
		return configError("Backoff.Maximum (%v) must be >= Backoff.Initial (%v)", b.Maximum, b.Initial)
	}
	b.Maximum = orDefault(b.Maximum, max(time.Second, b.Initial))
	b.Multiplier = orDefault(b.Multiplier, 2)
	b.Jitter = offOrDefault(b.Jitter, 0.5)
	r.backoff = b
	return nil
}

// resolveBlocks validates the blocks that have packages of their own.
func resolveBlocks(r *resolved) error {
	c := r.Config
	if c.LocalSaturation < 0 {
		return configError("LocalSaturation must be >= 0 (0 = off), got %v", c.LocalSaturation)
	}
	if err := c.Budget.Validate(); err != nil {
		return fmt.Errorf("%w: Budget: %w", ErrInvalidConfig, err)
	}
	if c.Breaker != nil {
		if err := c.Breaker.Validate(); err != nil {
			return fmt.Errorf("%w: Breaker: %w", ErrInvalidConfig, err)
		}
	}
	if c.Limit != nil {
		if err := c.Limit.Validate(); err != nil {
			return fmt.Errorf("%w: Limit: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// maxFinite is the largest finite float64: x <= maxFinite is false for +Inf and NaN.
const maxFinite = 1.7976931348623157e308

// orDefault is v, or def when v is zero.
func orDefault[T time.Duration | float64 | int](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// offOrDefault is v, def when v is zero, and zero when v is Off.
func offOrDefault[T time.Duration | float64](v, def T) T {
	if v == Off {
		return 0
	}
	return orDefault(v, def)
}
