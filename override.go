package hedge

import (
	"context"
	"fmt"
	"time"
)

// WithTrigger makes the calls made with ctx use t's threshold in place of their policy's,
// for one call or a few, without touching the policy: a caller that knows a request is cheap
// to wait for turns hedging off for it, one with a tighter need hedges it sooner. t may be:
//
//   - the zero Trigger ("none"): the call is not hedged. Retries, the budget's deposit, the
//     breaker and the limit still apply;
//   - [After](d): a hedge is due d after the first attempt was sent;
//   - [AtQuantile](q): a hedge is due at the q quantile of the latency the policy has learnt.
//     A policy whose trigger learns no latency (none, After) has nothing to read, and the
//     call is not hedged; a policy still learning (cold) suppresses the hedge as it would
//     its own. The policy's MinimumDelay and MaximumDelay clamp the quantile.
//
// Only the threshold changes: the policy's Attempts and MaximumConcurrent still bound the
// call (a policy without a trigger sends one attempt unless its Attempts says more); the
// policy's kind of evidence stays (a StartAware or Tied policy counts the threshold from the
// start of service); every gate and the budget apply as they do to the policy's own hedges.
// t's settings are not read. Any other trigger (StartAware, Tied) panics: its evidence is
// the policy's to choose. So does a trigger [Config.Validate] refuses (After a negative
// delay, a quantile outside [0.5, 1)): a program's error, as [MustNew]'s.
func WithTrigger(ctx context.Context, t Trigger) context.Context {
	switch t.kind {
	case triggerNone, triggerAfter, triggerQuantile:
	default:
		panic(fmt.Sprintf("hedge: WithTrigger(%v): only none, after and quantile can be set per call", t))
	}
	if err := (Config{Trigger: t}).Validate(); err != nil {
		panic(fmt.Sprintf("hedge: WithTrigger(%v): %v", t, err)) // After(-1s) would hedge at once
	}
	return withOptions(ctx, func(o *callOptions) { o.trigger = &t })
}

// TriggerFrom returns the trigger [WithTrigger] set on ctx, and whether one was set.
func TriggerFrom(ctx context.Context) (Trigger, bool) {
	if t := optionsFrom(ctx).trigger; t != nil {
		return *t, true
	}
	return Trigger{}, false
}

// overrideThreshold is the threshold a call with the per-call trigger t uses, whether it
// hedges at all, and whether the threshold is known yet (false: cold).
func (p *Policy) overrideThreshold(now time.Time, t Trigger) (hedges bool, d time.Duration, warm bool) {
	switch t.kind {
	case triggerAfter:
		return true, t.delay, true
	case triggerQuantile:
		if p.est == nil {
			return false, 0, false
		}
		d, ok := p.est.Quantile(now, t.q)
		if !ok {
			return true, 0, false
		}
		return true, p.clampDelay(d), true
	}
	return false, 0, false
}
