package hedge

import (
	"fmt"
	"math"
	"time"

	"github.com/hedgekit/hedge/latency"
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

// Trigger decides when a call is slow enough to send a hedge (docs/design.md, "Triggers"),
// and carries its settings ([Adaptive]). The zero Trigger hedges nothing: the policy then
// only retries (when Attempts allows) and applies its breaker and limit. Its text form
// ([Trigger.String], [Trigger.MarshalText]) is what configuration files and logs show:
// "quantile 0.95", "quantile 0.95 backlog_ratio=1.5", "tied tie_delay=2ms", "after 20ms".
type Trigger struct {
	kind     triggerKind
	q        float64
	delay    time.Duration
	adaptive Adaptive
}

// Adaptive holds the settings of the adaptive triggers, [AtQuantile], [StartAware] and
// [Tied]: how they learn their threshold, the gates that keep AtQuantile's and StartAware's
// hedges off a dependency that a hedge would not help, and Tied's delay (docs/design.md,
// "Triggers", "Queued or in service" and "The gates"). A zero field means its default, so
// AtQuantile(q) is AtQuantile(q, Adaptive{}). A field the trigger does not read is an error
// ([Config.Validate]), never silently ignored: MinimumInService, BacklogRatio, WinRate and
// UseDeadline are AtQuantile's and StartAware's, TieDelay is Tied's.
type Adaptive struct {
	// Window is how far back the latency estimator looks. 0 = 30s.
	Window time.Duration
	// MinimumSamples is how many latencies the estimator needs before the trigger hedges (a
	// cold estimator suppresses hedges with ReasonCold; a tie of Tied needs no threshold).
	// 0 = 20.
	MinimumSamples int
	// MinimumDelay and MaximumDelay clamp the learnt threshold. 0 = 10ms and no maximum.
	MinimumDelay, MaximumDelay time.Duration

	// MinimumInService (AtQuantile, StartAware): only a first attempt known to have been in
	// service, not queued, for at least this long is hedged; a copy of a queued request waits
	// behind it and only adds load. Without start signals the client infers it: in a
	// first-in-first-out server a call that a later call of the same policy has overtaken
	// (answered first) is in service, for at least the time since it was first overtaken (a
	// busy client, whose timers fire late, asks that much more). A call that nothing could have
	// overtaken, because no later call has started (one call in flight at a time, or a thin
	// share of a fleet's traffic), is hedged on its age while the recent median is within
	// 1.1 × its lowest: no queue is forming, so it is a straggler. With StartAware and start
	// signals, the server's word replaces the inference. 0 = 10ms; Off = hedge on the
	// attempt's age alone.
	MinimumInService time.Duration
	// BacklogRatio (AtQuantile, StartAware) pauses hedging while the dependency is slow as a
	// whole rather than one call by bad luck: while the recent median latency is above
	// BacklogRatio × its lowest over the last Window or two, by at least MinimumDelay/4 and
	// beyond what this process adds itself (a queue is forming; a busy client, whose timers
	// fire late, moves its own median with no queue anywhere), or while more than three times
	// 1-q of the last second's calls (at least 64 calls) reach their threshold (a slowdown the
	// threshold has not caught up with). Hedges would add load to all of it (ReasonBacklog).
	// 0 = 1.3; otherwise > 1; Off = no backlog gate.
	BacklogRatio float64
	// WinRate (AtQuantile, StartAware) is the win-rate loop: while fewer than WinRate.Floor of
	// hedges win (by more than chance explains: see package winrate), the share of would-be hedges sent halves (down to
	// WinRate.MinimumAllowance), and it comes back a quarter at a time once they win again. A
	// hedge that seldom wins is not beating stragglers (the service has none) and only adds
	// load (ReasonWinRate). Zero fields are winrate's defaults, except Floor: 0 = 0.3;
	// Floor Off = no loop.
	WinRate winrate.Config

	// UseDeadline (AtQuantile, StartAware) makes hedging deadline-aware, for calls whose caller has a
	// deadline (ctx.Deadline() in Do and DoInline; CallOptions.Deadline for a driver of Call). A
	// hedge falls due no later than the call's last moment, the deadline less the live q-quantile of
	// attempt latencies (a copy sent then answers in time as often as q of attempts do), even when
	// the threshold comes later, though never sooner than MinimumDelay after the attempt it copies. A
	// hedge that falls due when less time is left than nearly every copy takes (the 0.01-quantile) is
	// not sent (ReasonNoTimeLeft): it would answer after its caller stopped waiting and only add
	// load. The in-service evidence (MinimumInService, start signals) and every gate still decide
	// whether a due hedge starts, and the budget pays for it, as for any hedge. A call without a
	// deadline, and every call while the estimator is cold, is hedged as without it.
	// false (the default) = hedges are not brought forward, and only a hedge that falls due when
	// the deadline leaves less than the median attempt latency is refused (ReasonNoTimeLeft), unless
	// the win-rate loop last found hedges winning: more likely than not, it would answer too late.
	// The rule is the loop's: a policy without it (WinRate.Floor Off) refuses no such hedge.
	UseDeadline bool

	// TieDelay (Tied) is how long a copy may wait for its start signal before a tied copy is
	// sent to another replica. Set it to a little more than the round trip to the servers: a
	// start signal takes a round trip to arrive, and a tie sent before it could arrive is sent
	// for every call. 0 = 1ms; Off = send every tied copy at once, with the first.
	TieDelay time.Duration
}

// AtQuantile hedges a call once it has run longer than the live q-quantile of the policy's
// recent attempt latencies (Adaptive.Window), clamped to [MinimumDelay, MaximumDelay]. It is
// the recommended trigger: when the dependency slows down the threshold moves with it, so the
// share of calls that hedge stays near 1-q instead of every call hedging in a brownout. It is
// silent until MinimumSamples latencies have been seen. q must be in [0.5, 1); settings,
// optional, are at most one [Adaptive] (zero fields = defaults).
//
// By default it hedges only a first attempt the client can tell is being served, not queued
// (Adaptive.MinimumInService), not while latency shows a backlog (Adaptive.BacklogRatio), and
// less while hedges stop winning (Adaptive.WinRate): a copy of a queued request waits behind
// it and only adds load.
func AtQuantile(q float64, settings ...Adaptive) Trigger {
	return Trigger{kind: triggerQuantile, q: q, adaptive: one("AtQuantile", settings)}
}

// StartAware is AtQuantile for a dependency whose server says when it starts work on a
// request (an attempt calls [StartedService]; a driver calls Call.AttemptStartedService): it
// hedges a first attempt once it has been in service longer than the live q-quantile of
// attempt latencies, and never one the server has not reported as started, which is still
// queued. Time spent queued does not count, so a backlog does not turn into hedges. While the
// policy has seen no start signal within Adaptive.Window it behaves exactly like
// AtQuantile(q), so a server that sends no signals still gets the client-only behaviour.
// q must be in [0.5, 1); settings as for AtQuantile.
func StartAware(q float64, settings ...Adaptive) Trigger {
	return Trigger{kind: triggerStartAware, q: q, adaptive: one("StartAware", settings)}
}

// After hedges a call once it has run for d, whatever the dependency's latency. Use it to
// reproduce published experiments, or when the latency distribution is known and fixed;
// [AtQuantile] adapts and is safer to leave on.
func After(d time.Duration) Trigger { return Trigger{kind: triggerAfter, delay: d} }

// Tied is tied requests (Dean & Barroso, "The Tail at Scale") for a dependency whose servers
// say when they start work on a request (an attempt calls [StartedService]; hedgehttp's
// Transport does when a hedgehttp.Queue sends its 1xx; a driver calls
// Call.AttemptStartedService). It dodges both causes of a slow call, each its own way
// (docs/design.md, "Tied requests"):
//
//   - Queueing. While no copy of the call has started service, a tied copy goes to another
//     replica Adaptive.TieDelay after the previous one was sent (up to MaximumConcurrent in
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
// backlog gate or win-rate loop (a backlog is what ties dodge, and a tie dropped from its
// queue costs the server nothing); a tie passes the other gates and spends the budget as any
// hedge does. Tied requests need that cancellation: where the server finishes a cancelled
// copy anyway, every tie is a whole second request, and only the budget bounds them. Against
// servers that send no start signal, nothing ever starts: every call sends its tied copy
// after TieDelay, and copies race as with After(TieDelay). Settings, optional, are at most
// one [Adaptive] (Window, MinimumSamples, MinimumDelay, MaximumDelay, TieDelay).
func Tied(settings ...Adaptive) Trigger {
	return Trigger{kind: triggerTied, q: tiedQuantile, adaptive: one("Tied", settings)}
}

// one returns the optional settings argument of a trigger constructor.
func one[S any](name string, settings []S) S {
	var s S
	switch len(settings) {
	case 0:
	case 1:
		s = settings[0]
	default:
		panic("hedge: " + name + " takes at most one settings struct")
	}
	return s
}

// tiedQuantile is the latency quantile past which Tied hedges a copy in service: the
// recommended AtQuantile's.
const tiedQuantile = 0.95

// defaultTieDelay is Adaptive.TieDelay's default: about twice a data-centre network's one-way
// delay, as Dean & Barroso suggest, so that a start signal sent the moment a copy arrives
// reaches the client before the twin would leave.
const defaultTieDelay = time.Millisecond

// ReadsStartSignals reports whether the trigger decides anything from the servers' start
// signals ([StartedService]): [Tied] and [StartAware] do; AtQuantile and After hedge on
// latency alone. A transport asks its servers for the signal only when the trigger reads it:
// the signal costs every request a write on the server and a wake-up on the client.
func (t Trigger) ReadsStartSignals() bool {
	switch t.kind {
	case triggerNone, triggerQuantile, triggerAfter:
		return false
	}
	return true
}

// estimate is how a threshold is learnt, with defaults applied (MinimumDelay; Window and
// MinimumSamples are the latency package's when zero).
type estimate struct {
	Window                     time.Duration
	MinimumSamples             int
	MinimumDelay, MaximumDelay time.Duration
}

// resolveTrigger validates the trigger and its settings and applies their defaults.
func resolveTrigger(r *resolved) error {
	t := r.Trigger
	switch t.kind {
	case triggerQuantile, triggerStartAware:
		name := "AtQuantile"
		if t.kind == triggerStartAware {
			name = "StartAware"
		}
		if !(t.q >= 0.5 && t.q < 1) {
			return configError("Trigger: %s(q) needs q in [0.5, 1), got %v", name, t.q)
		}
		if t.adaptive.TieDelay != 0 {
			return configError("Trigger: Adaptive.TieDelay is read only by Tied, not by %s", name)
		}
		return r.resolveGates(t.adaptive)
	case triggerAfter:
		if t.delay < 0 {
			return configError("Trigger: After(d) needs d >= 0, got %v", t.delay)
		}
	case triggerTied:
		return r.resolveTied(t.adaptive)
	}
	return nil
}

// resolveGates resolves AtQuantile's and StartAware's settings.
func (r *resolved) resolveGates(a Adaptive) error {
	if err := r.resolveEstimate(a); err != nil {
		return err
	}
	if a.MinimumInService < 0 && a.MinimumInService != Off {
		return configError("Trigger: Adaptive.MinimumInService must be >= 0 (0 = 10ms, Off = none), got %v", a.MinimumInService)
	}
	r.inService = offOrDefault(a.MinimumInService, 10*time.Millisecond)
	if b := a.BacklogRatio; math.IsNaN(b) || math.IsInf(b, 0) || (b != 0 && b != Off && !(b > 1)) {
		return configError("Trigger: Adaptive.BacklogRatio must be a finite number > 1 (0 = 1.3, Off = no gate), got %v", b)
	}
	r.backlogRatio = offOrDefault(a.BacklogRatio, 1.3)
	r.useDeadline = a.UseDeadline
	w := a.WinRate
	if w.Floor == Off {
		if w != (winrate.Config{Floor: Off}) {
			return configError("Trigger: Adaptive.WinRate: with Floor Off there is no loop, and its other fields are read by none; got %+v", w)
		}
		return nil
	}
	w.Floor = orDefault(w.Floor, 0.3)
	if err := w.Validate(); err != nil {
		return fmt.Errorf("%w: Trigger: Adaptive.WinRate: %w", ErrInvalidConfig, err)
	}
	r.winRate = &w
	return nil
}

// resolveTied resolves Tied's settings: it runs none of the gates of AtQuantile's settings.
func (r *resolved) resolveTied(a Adaptive) error {
	if a.MinimumInService != 0 || a.BacklogRatio != 0 || a.WinRate != (winrate.Config{}) {
		return configError("Trigger: Adaptive.MinimumInService, BacklogRatio and WinRate are read by AtQuantile and StartAware, not by Tied")
	}
	if a.UseDeadline {
		return configError("Trigger: Adaptive.UseDeadline is read by AtQuantile and StartAware, not by Tied")
	}
	if err := r.resolveEstimate(a); err != nil {
		return err
	}
	if a.TieDelay < 0 && a.TieDelay != Off {
		return configError("Trigger: Adaptive.TieDelay must be >= 0 (0 = 1ms, Off = at once), got %v", a.TieDelay)
	}
	r.tieDelay = offOrDefault(a.TieDelay, defaultTieDelay)
	return nil
}

// resolveEstimate validates how a threshold is learnt.
func (r *resolved) resolveEstimate(a Adaptive) error {
	switch {
	case a.Window < 0 || (a.Window > 0 && a.Window < latency.MinimumWindow):
		return configError("Trigger: Adaptive.Window must be 0 (30s) or at least %v, got %v", latency.MinimumWindow, a.Window)
	case a.MinimumSamples < 0:
		return configError("Trigger: Adaptive.MinimumSamples must be >= 0 (0 = 20), got %d", a.MinimumSamples)
	case a.MinimumDelay < 0:
		return configError("Trigger: Adaptive.MinimumDelay must be >= 0 (0 = 10ms), got %v", a.MinimumDelay)
	case a.MaximumDelay < 0:
		return configError("Trigger: Adaptive.MaximumDelay must be >= 0 (0 = none), got %v", a.MaximumDelay)
	}
	e := estimate{a.Window, a.MinimumSamples, orDefault(a.MinimumDelay, 10*time.Millisecond), a.MaximumDelay}
	if e.MaximumDelay > 0 && e.MaximumDelay < e.MinimumDelay {
		return configError("Trigger: Adaptive.MaximumDelay (%v) must be >= MinimumDelay (%v)", e.MaximumDelay, e.MinimumDelay)
	}
	r.estimate = e
	return nil
}
