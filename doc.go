// Package hedge makes request hedging safe to leave on.
//
// A hedge sends a second copy of a call that is taking longer than almost every other call
// to the same dependency and returns whichever answer arrives first. It cuts the tail when
// slowness is bad luck, and makes things far worse when slowness is queueing: the copy waits
// in the same queue and adds load for everyone. So a [Policy] hedges at a live latency
// quantile ([AtQuantile]) only a call it can tell is being served, not queued (a later call
// overtook it, or the server said so: [StartAware]), pauses while the dependency is slow as a
// whole, spends a budget shared with retries, stops when the dependency is failing or
// overloaded, when hedges stop winning, for sheddable calls and for calls that are not
// repeatable, can put an adaptive concurrency limit inside the hedge, and reports every
// decision as an [Event].
//
// # Build once, share everywhere
//
// A Policy learns from every call made through it: its latency estimate, budget, breaker and
// limit are its own. Build one per dependency when the program starts and share it. A Policy
// built per call never warms up, so it never hedges, and its budget never accumulates.
//
//	var users = hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
//
//	func lookup(ctx context.Context, id string) (User, error) {
//		return hedge.Do(ctx, users, func(ctx context.Context) (User, error) {
//			return fetchUser(ctx, id) // must honour ctx: a losing attempt is cancelled
//		})
//	}
//
// # One brain, two bodies
//
// Every decision — when to hedge, which gate suppresses, whether to retry, who wins — is made
// by the per-call state machine [Call] together with the Policy's shared objects, all of which
// take the time as an argument. [Do] drives a Call with a goroutine per attempt and a real
// timer; the simulator in package sim drives the very same Call on an event heap and a virtual
// clock. That is why the simulator's figures are about this library and not about a model of
// it.
//
// # Semantics
//
// Attempts counts every call that reaches the dependency, concurrent (hedges) or sequential
// (retries); MaximumConcurrent bounds those in flight. The first success wins; a failure never
// wins a race. A retriable failure with nothing else in flight is retried after a backoff
// while attempts and budget remain. Losers are cancelled through their context the moment a
// winner is chosen, and the time they had run is fed to the estimator as a censored sample.
// A permanent failure stops new attempts but does not beat a slower success. The design,
// with the state machine and the gates, is in docs/design.md in the repository.
package hedge
