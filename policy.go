package hedge

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/latency"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

// Policy holds everything calls to one dependency share: the latency estimator, the budget,
// the breaker, the limit, the win-rate loop and the counters. Its value is in what it
// learns from many calls, so build it once per dependency and share it everywhere: a Policy
// built per call never warms up and never hedges. It is safe for concurrent use by any
// number of goroutines, starts no goroutines of its own, and every method that depends on
// time takes it as an argument (Do reads the clock once per event) so the simulator can
// drive the same code on a virtual clock.
//
// # Nil and zero policies
//
// A nil *Policy is the zero Policy (one not built by [New]): it has learnt nothing. What
// reads or informs a policy takes either: [Policy.Measured] and [Policy.MeasuredAt] return
// zero figures, [Policy.ServerQueue] reports no queue and [Policy.ReportLoad] drops the
// report, so a caller can ask after a policy that may not exist yet (the transports' Policy
// methods return nil for a dependency not called yet). What runs a call under it
// ([Policy.NewCall], [Call.Start], [Do], [DoDetached], [DoInline], [DoInlineDetached])
// panics with a hedge: message saying to build it with New: a call needs what the policy
// learns, and running it unhedged would hide the mistake.
type Policy struct {
	cfg      resolved
	est      *latency.Estimator // nil unless the trigger is AtQuantile, StartAware or Tied
	recent   *median            // the recent median, for the backlog gate; nil = no gate
	blog     *backlog
	cross    *crossings
	ovt      *overtakes                       // nil unless hedges need in-service evidence
	rovt     atomic.Pointer[replicaOvertakes] // per replica, made on the first multi-replica route
	bud      *budget.Budget
	brk      *breaker.Breaker // nil = no breaker
	lim      *limit.Gradient2 // nil = no limit
	win      *winrate.Loop    // nil = no win-rate loop
	sat      *saturation      // nil = not watching local saturation
	classify func(error) Outcome
	observe  func(Event)

	overloadUntil atomic.Int64  // unix nanoseconds; hedging pauses until then
	overloadFor   atomic.Int64  // the length of that pause, ns: more than this of it left is a clock stepped back
	overloadMu    sync.Mutex    // serialises noteOverload's writers (overloaded reads without it)
	yieldScore    atomic.Int32  // whether Do's yield before arming a timer tends to pay
	lastSignal    atomic.Int64  // unix nanoseconds of the latest start signal (StartAware)
	lag           atomic.Int64  // nanoseconds: how late timers fire, a moving average (backlog gate)
	stallAt       atomic.Int64  // unix nanoseconds: when a timer last fired late by a stall (see noteLateness)
	stall         atomic.Int64  // nanoseconds: how late that timer fired
	lastSlow      atomic.Uint32 // two bits per recent answer, newest lowest: it was slow (see noteAnswer)
	lastSlowAt    atomic.Int64  // unix nanoseconds: when the latest slow answer was noted
	loads         loadBoard     // the servers' latest load reports (serverload.go)

	calls         atomic.Int64
	hedgesStarted atomic.Int64
	hedgesWon     atomic.Int64
	retries       atomic.Int64
	suppressed    [numReasons]atomic.Int64

	kits    sync.Pool // Do's drivers' reusable parts (see kit)
	drivers sync.Pool // DoInline's drivers, with their kits (see driver)
}

// New builds a policy from cfg, applying defaults to zero fields. It returns an error
// wrapping [ErrInvalidConfig] that names the field and the rule when cfg is invalid.
func New(cfg Config) (*Policy, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	p := &Policy{cfg: r, classify: cfg.Classify, observe: cfg.Observer}
	if p.classify == nil {
		p.classify = Classify
	}
	if k := r.Trigger.kind; k == triggerQuantile || k == triggerStartAware || k == triggerTied {
		p.est, err = latency.New(latency.Config{Quantile: r.Trigger.q, Window: r.Window, MinimumSamples: r.MinimumSamples})
		if err != nil {
			return nil, configError("%v", err)
		}
	}
	if k := r.Trigger.kind; k == triggerQuantile || k == triggerStartAware {
		if r.inService > 0 {
			p.ovt = new(overtakes)
		}
		// The recent median and its floor are the backlog gate's evidence, and the quiet
		// median's, which lets a client that nothing overtakes (one call in flight) hedge
		// when the in-service gate is on: either needs them.
		if r.backlogRatio > 0 || r.inService > 0 {
			w := p.est.Config().Window
			p.recent = new(median)
			p.blog = &backlog{period: int64(w)}
			p.cross = &crossings{period: int64(max(w/recentDivisor, latency.MinimumWindow))}
		}
	}
	if p.bud, err = budget.New(r.Budget); err != nil {
		return nil, configError("Budget: %v", err)
	}
	if r.Breaker != nil {
		bc := *r.Breaker
		user := bc.OnStateChange
		bc.OnStateChange = func(from, to breaker.State, now time.Time) {
			if user != nil {
				user(from, to, now)
			}
			p.emit(Event{Kind: BreakerChanged, Time: now, Attempt: -1, State: to.String()})
		}
		if p.brk, err = breaker.New(bc); err != nil {
			return nil, configError("Breaker: %v", err)
		}
	}
	if r.Limit != nil {
		lc := *r.Limit
		user := lc.OnLimitChange
		lc.OnLimitChange = func(old, new int, now time.Time) {
			if user != nil {
				user(old, new, now)
			}
			p.emit(Event{Kind: LimitChanged, Time: now, Attempt: -1, Limit: new})
		}
		if p.lim, err = limit.New(lc); err != nil {
			return nil, configError("Limit: %v", err)
		}
	}
	if r.winRate != nil {
		if p.win, err = winrate.New(*r.winRate); err != nil {
			return nil, configError("Trigger: Adaptive.WinRate: %v", err)
		}
	}
	if r.LocalSaturation > 0 {
		p.sat = newSaturation(r.LocalSaturation)
	}
	return p, nil
}

// MustNew is New for configurations known to be valid (package-level policies): it panics
// with New's error.
func MustNew(cfg Config) *Policy {
	p, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

func (p *Policy) emit(e Event) {
	if p.observe != nil {
		p.observe(e)
	}
}

// threshold is the hedge delay a call starting now uses, and whether there is one yet. For
// AtQuantile it is one atomic load of the estimator's cached quantile.
func (p *Policy) threshold() (time.Duration, bool) {
	switch p.cfg.Trigger.kind {
	case triggerAfter:
		return p.cfg.Trigger.delay, true
	case triggerQuantile, triggerStartAware, triggerTied:
		d, ok := p.est.Threshold()
		if !ok {
			return 0, false
		}
		return p.clampDelay(d), true
	}
	return 0, false
}

// clampDelay holds a quantile's threshold d to MinimumDelay and, when there is one,
// MaximumDelay: the policy's own trigger and a per-call one (WithTrigger) alike.
func (p *Policy) clampDelay(d time.Duration) time.Duration {
	d = max(d, p.cfg.MinimumDelay)
	if m := p.cfg.MaximumDelay; m > 0 {
		d = min(d, m)
	}
	return d
}

// recordLatency feeds the estimator, unless this process is saturated: then latencies
// measure the process, not the dependency. An answer (answer true) also says whether it was
// slow (noteAnswer); the censored sample of a loser does not: a copy sent after it answered
// first, and that copy's own answer, just noted, is the evidence of a queue, not the time the
// loser had run (a straggler's, whatever the queue).
func (p *Policy) recordLatency(now time.Time, d time.Duration, answer bool) (slow bool) {
	if p.est == nil {
		return false
	}
	if p.sat != nil && p.saturated(now) {
		return false
	}
	p.est.Record(now, d)
	if p.recent != nil {
		if !p.recent.settled() {
			p.recent.seed(now, p.est)
			return false
		}
		p.recent.record(d)
		p.blog.observe(now, p.recent.load())
		if answer {
			return p.noteAnswer(now, d)
		}
	}
	return false
}

// noteAnswer shifts into lastSlow whether an answer that took d, received at now, was slow:
// more than twice the recent median's lowest, beyond what this process adds itself (its
// timers' usual lateness, and a stall of its own while the call ran; see noteLateness) and by
// at least MinimumDelay/quietRiseDivisor. One answer in a few is slow by bad luck (a
// straggler); a queue makes most of them slow at once, long before the median of a client
// with a thin share of the traffic, which follows a change only over a few hundred answers,
// moves.
//
// The backlog gate (slowAnswers) counts an answer only if it also rose by MinimumDelay/
// backlogRiseDivisor, as the median must (Policy.backlogged); quiet counts the smaller rises
// too. Calls that take a millisecond or two, most of it the client's own, rise by a
// millisecond whenever a busy client's goroutines wait for a CPU, in bursts its timers do not
// always show: in a closed loop of 64 callers over 32 or 64 clients, the gate refused up to 86
// hedges of 100ms stragglers in 128,000 calls on such bursts (a median of 9 to 24 a run, real
// or simulated), and a median of 3 to 6 with this rule (BENCHMARKS.md, "A client's own drift
// is no backlog"). A queue that short cannot cost a copy its race anyway; for quiet, which
// asks that nothing queues, it is reason enough to doubt.
func (p *Policy) noteAnswer(now time.Time, d time.Duration) bool {
	f := p.blog.floor()
	if f <= 0 {
		return false
	}
	r := d - f - p.selfDelay() - p.stalledDuring(now, d)
	slow := uint32(0)
	if r > f && r >= p.cfg.MinimumDelay/quietRiseDivisor {
		slow = slowForQuiet
		if r >= p.cfg.MinimumDelay/backlogRiseDivisor {
			slow |= slowForBacklog
		}
	}
	if slow != 0 {
		p.lastSlowAt.Store(now.UnixNano())
	}
	for {
		v := p.lastSlow.Load()
		if p.lastSlow.CompareAndSwap(v, v<<1&^slowForBacklog|slow) {
			return slow != 0
		}
	}
}

// lastSlow holds two records of the latest answers, one bit each, the newest lowest:
// slowForQuiet's in its low 16 bits, slowForBacklog's in the high 16 (see noteAnswer).
const (
	slowForQuiet   = 1
	slowForBacklog = 1 << 16
)

// quietSlowAnswers is how many of the policy's last quietAnswers answers may be slow while its
// median still counts as quiet. None: one slow answer in eight already turns the quiet-median
// evidence off until eight quick ones follow. Measured on the scorecard when it was chosen
// (25 families, seeds 1-3, 100,000 calls, before the backlog gate's lost-attempt rule, which
// later took recommended to 710): allowing one held on 700 of 714 points, allowing none on 702 (the
// fleets of 256 and of sequential clients at 95 % load); the payoff checks fell from 237 to
// 225 of 264.
const (
	quietAnswers     = 8
	quietSlowAnswers = 0
)

// recentDivisor sets the period over which the backlog gate counts calls crossing their
// threshold: Window/recentDivisor (1s by default), long enough for a steady share, short enough
// to see a slowdown within a second.
const recentDivisor = 30

// crossingFactor: the backlog gate closes while more than crossingFactor × (1-q) of recent
// calls reach their threshold.
const crossingFactor = 3

// backlogged reports whether the dependency as a whole is slow now, not one call by bad luck:
// the recent median latency, less what this process adds itself (selfDelay), is above
// backlogRatio × its lowest value over the last one to two Windows, by at least a quarter of
// MinimumDelay (a queue is forming), or far more calls than 1-q reach their threshold (the
// threshold, learnt over Window, has not caught up with a slowdown). A hedge would then add
// load to all of it.
//
// The rise must be large in absolute terms too because a busy client moves its own median: on
// a machine short of CPU, or through a garbage collection, a call that takes 2ms takes 3ms,
// with no queue anywhere. A rise of a fraction of the smallest hedge delay cannot cost a
// hedge its race either: the copy waits that long in the queue and still beats a straggler.
// A queue that matters to hedging is measured in the same milliseconds as the delay.
func (p *Policy) backlogged(now time.Time) bool {
	if p.recent == nil || p.cfg.backlogRatio <= 0 {
		return false
	}
	if sh, ok := p.cross.share(now, p.calls.Load()); ok && sh > crossingFactor*(1-p.cfg.Trigger.q) {
		return true
	}
	return p.inflated(p.cfg.backlogRatio, p.cfg.MinimumDelay/backlogRiseDivisor) == inflatedYes
}

// slowAnswersBacklog is how many of the policy's last quietAnswers answers must be slow
// (noteAnswer) for slowAnswers to see a queue: half. Stragglers make one answer in twenty or
// fifty slow (the families' 2 to 5 %), so half of eight is a queue, not bad luck.
const slowAnswersBacklog = quietAnswers / 2

// slowAnswers reports whether half or more of the policy's latest answers were slow, by a rise
// of MinimumDelay/backlogRiseDivisor or more (see noteAnswer): the dependency is queueing now,
// whatever the recent median says. A client with a thin share of a fleet's traffic moves its
// median only over hundreds of answers, minutes of them, and fills a crossing block only
// every ten seconds or more, so neither shows a queue that builds up in seconds; its last
// eight answers do. Under a steady queue near full, such a client's calls are overtaken (in
// service) or look quiet as often as ever, and their copies join the back of the queue,
// adding load where a little more of it costs everyone most.
func (p *Policy) slowAnswers() bool {
	return p.recent != nil && p.cfg.backlogRatio > 0 && bits.OnesCount32(p.lastSlow.Load()/slowForBacklog&(1<<quietAnswers-1)) >= slowAnswersBacklog
}

// rise is what the recent median shows against its lowest.
type rise uint8

const (
	inflatedUnknown rise = iota // the median is not known yet
	inflatedNo
	inflatedYes
)

// inflated reports whether the recent median, less what this process adds itself, is above
// ratio × its lowest and at least least above it.
func (p *Policy) inflated(ratio float64, least time.Duration) rise {
	m, f, ok := p.medianAndFloor()
	if !ok {
		return inflatedUnknown
	}
	r := m - f - p.selfDelay()
	if r >= least && float64(f+r) > ratio*float64(f) {
		return inflatedYes
	}
	return inflatedNo
}

// lagWeight: the timer lateness estimate moves 1/lagWeight of the way to each new reading.
const lagWeight = 32

// lagWakeups is how much more a busy process adds to a call's latency than to a timer's:
// a timer wakes one goroutine, an answer passes through several (the connection's writer
// and reader, the caller; the server's too when it shares the machine), each waiting for a
// CPU. Measured with TestRealLoad on a 2-core machine starved by other work: the median
// latency rose 5 to 23 times (16 in the median) as much as the timers were late.
const lagWakeups = 16

// noteLateness records that a timer of a call fired late by late, at now: the time between
// when the state machine asked to be woken and when its driver woke it is this process's own
// delay (runnable goroutines waiting for a CPU), which every call's latency carries too.
//
// A timer late by as much as makes an answer slow (MinimumDelay/quietRiseDivisor) is a stall
// of this process: a garbage collection, a burst of work, the machine taking its CPUs. Every
// answer that arrived in it was late by it, with no queue anywhere, and a busy client's
// answers arrive in bursts after one: measured with 64 closed-loop callers on a 2-core
// machine, the backlog gate refused 20-35 hedges in 128,000 calls on slow answers right after
// stalls, where its twin, whose delays do not stall together, refused 1-16. So a stall in
// which a slow answer was noted clears the record of slow answers (a stall delays every
// answer in flight, and those received before its timer woke are already in it), and an
// answer whose call ran through a stall is slow only beyond it (stalledDuring). A queue at
// the dependency leaves the client's timers on time.
func (p *Policy) noteLateness(now time.Time, late time.Duration) {
	if p.recent == nil || late < 0 {
		return
	}
	v := p.lag.Load()
	p.lag.CompareAndSwap(v, v+(int64(late)-v)/lagWeight)
	if late < p.cfg.MinimumDelay/quietRiseDivisor {
		return
	}
	t := now.UnixNano()
	if at := p.stallAt.Load(); t-int64(late) > at || int64(late) >= p.stall.Load() || at > t {
		// A stall that began after the last one ended replaces it; within the same one,
		// the latest timer to fire says how long it lasted only if it fired later still. One
		// stamped ahead of now was stamped before the wall clock stepped back: replaced.
		p.stall.Store(int64(late))
		p.stallAt.Store(t)
	}
	if at := p.lastSlowAt.Load(); at >= t-int64(late) && at <= t {
		p.lastSlow.Store(0)
	}
}

// stalledDuring is how long this process stalled while a call that took d, answered at now,
// ran: the latest stall's length (see noteLateness), if its timer woke after the call began
// (and not after now: a stall stamped ahead of now was stamped before the wall clock stepped
// back, and says nothing of this call), or 0.
func (p *Policy) stalledDuring(now time.Time, d time.Duration) time.Duration {
	at := p.stallAt.Load()
	if at == 0 || at < now.Add(-d).UnixNano() || at > now.UnixNano() {
		return 0
	}
	return time.Duration(p.stall.Load())
}

// selfDelay estimates how much this process adds to a call's latency now, from how late its
// timers fire. A busy client (a machine shared with other work, a garbage collection, more
// goroutines than cores) moves its own median with no queue anywhere, and its timers fire
// late by the same cause; a queue at the dependency delays answers and leaves the client's
// timers on time. Evidence of a backlog is a rise beyond it.
func (p *Policy) selfDelay() time.Duration { return lagWakeups * time.Duration(p.lag.Load()) }

// backlogRiseDivisor: the backlog gate's median rule needs the median at least
// MinimumDelay/backlogRiseDivisor above its lowest.
const backlogRiseDivisor = 4

// quietRatio: while the recent median is within quietRatio × its lowest over the last Window
// or two, nothing is queueing at the dependency, and a call past its threshold is a straggler
// whatever overtaking shows (see Call.served).
const quietRatio = 1.1

// medianAndFloor returns the recent median latency m and its lowest over the last one to two
// Windows f, once both are known.
func (p *Policy) medianAndFloor() (m, f time.Duration, ok bool) {
	if p.recent == nil || !p.recent.settled() {
		return 0, 0, false
	}
	m, f = p.recent.load(), p.blog.floor()
	return m, f, f > 0
}

// quiet reports whether the dependency shows no queue: the recent median is within
// quietRatio of its lowest, or less than MinimumDelay/quietRiseDivisor above it (for a
// dependency that answers in microseconds a tenth of its median is jitter), beyond what this
// process adds itself. It is the evidence a client has when nothing overtakes its calls (one
// call in flight at a time, or a thin share of a fleet's traffic): a queue raises the median
// of every call, a straggler does not.
//
// A median that is quiet while most of the latest answers are slow is a median that has not
// caught up (a client with a thin share of a fleet's traffic, whose copies and its peers' build
// a queue its few answers take minutes to show in the median): no more than quietSlowAnswers
// (none) of the last quietAnswers answers may be slow (noteAnswer).
func (p *Policy) quiet() bool {
	if bits.OnesCount32(p.lastSlow.Load()&(1<<quietAnswers-1)) > quietSlowAnswers {
		return false
	}
	return p.inflated(quietRatio, p.cfg.MinimumDelay/quietRiseDivisor) == inflatedNo
}

// quietRiseDivisor: a median less than MinimumDelay/quietRiseDivisor above its lowest is
// quiet, whatever the ratio.
const quietRiseDivisor = 10

// crossedThreshold records that a call reached its hedge threshold at now.
func (p *Policy) crossedThreshold(now time.Time) {
	if p.cross != nil {
		p.cross.crossed(now, p.calls.Load())
	}
}

// signalled reports whether start signals are arriving: one was seen within Window, either
// way (a signal stamped more than Window ahead of now was stamped before the wall clock
// stepped back, and says nothing of now).
func (p *Policy) signalled(now time.Time) bool {
	t := p.lastSignal.Load()
	d, w := now.UnixNano()-t, int64(p.est.Config().Window)
	return t != 0 && d < w && d > -w
}

func (p *Policy) noteSignal(now time.Time) {
	// The latest signal, or one far behind the one kept: the clock stepped back.
	if t, last := now.UnixNano(), p.lastSignal.Load(); t > last || last-t >= int64(p.est.Config().Window) {
		p.lastSignal.Store(t)
	}
}

func (p *Policy) saturated(now time.Time) bool {
	if p.lim != nil && p.lim.InFlight() >= p.lim.Limit() {
		return true
	}
	return p.sat.check(now)
}

func (p *Policy) noteOverload(now time.Time, retryAfter time.Duration) {
	d := max(p.cfg.cooldown, retryAfter)
	t := now.UnixNano()
	until := t + int64(d)
	if d > 0 && until < t {
		until = 1<<63 - 1 // a pause past the year 2262: as long as can be, not none
	}
	p.overloadMu.Lock()
	defer p.overloadMu.Unlock()
	if p.overloadUntil.Load() >= until {
		return
	}
	// The length first, then the end: a reader (overloaded) that saw the new end beside the
	// old length would take a pause longer than its length for a clock stepped back, and end
	// it at once. One that sees the new length beside the old end may cut the old pause
	// short; the new end, stored next whatever the reader did, follows it.
	p.overloadFor.Store(until - t)
	if overloadStored != nil {
		overloadStored()
	}
	p.overloadUntil.Store(until)
}

// overloadStored, when set (by tests), runs in noteOverload between its two stores.
var overloadStored func()

// overloaded reports whether hedging is paused at now by an overload (noteOverload). A pause
// with more of it left than its length was set before the wall clock stepped back: it ends
// its length from now, not the step later.
func (p *Policy) overloaded(now time.Time) bool {
	t, until := now.UnixNano(), p.overloadUntil.Load()
	if t >= until {
		return false
	}
	if n := p.overloadFor.Load(); until-t > n {
		p.overloadUntil.CompareAndSwap(until, t+n)
	}
	return true
}

const yieldScoreBound = 8

// yieldPays reports whether Do should yield before arming the hedge timer of call number
// seq: while yielding has paid off recently, and on one call in 64 otherwise, to notice when
// it starts paying again.
func (p *Policy) yieldPays(seq int64) bool {
	return p.yieldScore.Load() >= 0 || seq%64 == 0
}

// yielded records whether a yield found the answer ready.
func (p *Policy) yielded(paid bool) {
	s := p.yieldScore.Load()
	switch {
	case paid && s < yieldScoreBound:
		p.yieldScore.Add(1)
	case !paid && s > -yieldScoreBound:
		p.yieldScore.Add(-1)
	}
}

// Measured is a snapshot of what a policy has learnt and done, readable at any time without
// waiting for a hedge.
type Measured struct {
	// Threshold is the hedge delay a call starting now would use; Warm is false (and
	// Threshold zero) until the estimator has MinimumSamples samples.
	Threshold time.Duration
	Warm      bool

	Calls         int64 // calls started
	HedgesStarted int64
	HedgesWon     int64
	// Retries counts retries scheduled (RetryScheduled events), each funded by the budget
	// when it was scheduled: one whose call ended during its backoff counts too.
	Retries int64
	// Suppressed counts suppressed hedges by reason.
	Suppressed map[Reason]int64

	// Budget is how many hedges or retries the budget would fund now (+Inf without a budget).
	Budget float64

	// Breaker is the breaker's state ("closed", "open", "half-open"; "" without a breaker)
	// and ErrorRate its failure ratio over its window.
	Breaker   string
	ErrorRate float64

	// Limit and InFlight are the adaptive limit and the attempts holding permits (0 without a
	// limit).
	Limit    int
	InFlight int

	// WinRateAllowance is the share of would-be hedges the win-rate loop lets start (1
	// without the loop).
	WinRateAllowance float64

	// OverloadUntil is when the latest overload cool-down ends (zero if none was seen).
	OverloadUntil time.Time
}

// Measured returns the policy's figures at time.Now() (see [Policy.MeasuredAt]).
func (p *Policy) Measured() Measured { return p.MeasuredAt(time.Now()) }

// MeasuredAt returns the policy's figures at now. A nil or zero Policy (not built by New)
// has learnt nothing: its figures are zero.
func (p *Policy) MeasuredAt(now time.Time) Measured {
	if p == nil || p.bud == nil {
		return Measured{Suppressed: map[Reason]int64{}, WinRateAllowance: 1}
	}
	m := Measured{
		Calls:            p.calls.Load(),
		HedgesStarted:    p.hedgesStarted.Load(),
		HedgesWon:        p.hedgesWon.Load(),
		Retries:          p.retries.Load(),
		Suppressed:       make(map[Reason]int64),
		Budget:           p.bud.Balance(now),
		WinRateAllowance: 1,
	}
	if p.cfg.Trigger.kind != triggerNone {
		m.Threshold, m.Warm = p.threshold()
	}
	for r := ReasonNotRepeatable; r < numReasons; r++ {
		if n := p.suppressed[r].Load(); n > 0 {
			m.Suppressed[r] = n
		}
	}
	if p.brk != nil {
		m.Breaker = p.brk.Peek(now).String() // no transition: Measured drives no call, and tells the Observer nothing
		m.ErrorRate, _ = p.brk.ErrorRate(now)
	}
	if p.lim != nil {
		m.Limit, m.InFlight = p.lim.Limit(), p.lim.InFlight()
	}
	if p.win != nil {
		m.WinRateAllowance = p.win.Allowance(now)
	}
	if u := p.overloadUntil.Load(); u != 0 {
		m.OverloadUntil = time.Unix(0, u)
	}
	return m
}

// saturation watches this process's scheduler latency, reading it at most once per
// interval (the reading that is due is taken by one caller, chosen by compare-and-swap).
type saturation struct {
	limit    time.Duration
	interval int64
	probe    func() time.Duration
	next     atomic.Int64
	busy     atomic.Bool
}

// saturationInterval is how often the scheduler latency is read: often enough to follow a
// burst of load, rarely enough that reading runtime/metrics costs nothing a call would notice.
const saturationInterval = 100 * time.Millisecond

func newSaturation(limit time.Duration) *saturation {
	return &saturation{limit: limit, interval: int64(saturationInterval), probe: newSchedulerProbe()}
}

func (s *saturation) check(now time.Time) bool {
	t := now.UnixNano()
	// A next more than an interval ahead was set before the wall clock stepped back: read
	// the probe now, or its last reading would stand until the clock caught up.
	if next := s.next.Load(); (t >= next || next-t > s.interval) && s.next.CompareAndSwap(next, t+s.interval) {
		s.busy.Store(s.probe() > s.limit)
	}
	return s.busy.Load()
}
