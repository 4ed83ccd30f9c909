package hedge

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/limit"
)

// ActionKind is what the state machine asks its driver to do.
type ActionKind uint8

const (
	// StartAttempt: send attempt Action.Attempt to the dependency (Action.Hedge says it is a
	// concurrent copy; Action.Retry a sequential retry; Action.Resend that it replaces an
	// attempt that never reached the dependency, and should go to another replica).
	StartAttempt ActionKind = iota + 1
	// CancelAttempt: stop waiting for attempt Action.Attempt and cancel it; its answer, if it
	// still comes, is discarded.
	CancelAttempt
	// ArmTimer: call TimerFired at Action.At. It replaces any timer armed before.
	ArmTimer
	// Finish: the call is over; Winner and Err say how.
	Finish
)

func (k ActionKind) String() string {
	switch k {
	case StartAttempt:
		return "start"
	case CancelAttempt:
		return "cancel"
	case ArmTimer:
		return "timer"
	case Finish:
		return "finish"
	}
	return "?"
}

// Action is one instruction from the state machine to its driver.
type Action struct {
	Kind    ActionKind
	Attempt int
	Hedge   bool
	Retry   bool
	Resend  bool
	// Slow, on a CancelAttempt, says the attempt lost a race: another attempt of its call
	// answered first while this one had been running for at least the call's hedge
	// threshold. It is evidence against the replica it went to (see hedge.LostSlow).
	Slow bool
	At   time.Time
}

// CallOptions describes one call to the state machine.
type CallOptions struct {
	// Repeatable says whether the call may reach the dependency more than once. Zero
	// (RepeatableDefault) is repeatable, as in Do: the state machine refuses hedges and retries
	// only to a NotRepeatable call. A driver that knows the call may not be repeated (hedgehttp
	// for a POST without an idempotency key) says NotRepeatable.
	Repeatable Repeatability
	// Criticality is how much the call matters. Zero (CriticalityDefault) is hedged as any
	// call; only a Sheddable call to a policy with Config.NeverHedgeSheddable is never hedged.
	Criticality Criticality
	// Trigger, when not nil, replaces the policy's threshold for this call (see
	// [WithTrigger] for what it may be).
	Trigger *Trigger
	// Deadline is when the caller stops waiting for the call; zero = no deadline. A policy
	// whose trigger has Adaptive.UseDeadline hedges by it; any adaptive policy refuses a hedge
	// by it when too little time is left while hedges are not winning (ReasonNoTimeLeft). Do
	// and DoInline set it from ctx.Deadline(); the simulator passes its virtual one.
	Deadline time.Time
	// Rand returns a float in [0, 1) for retry jitter. nil = math/rand/v2. The simulator passes
	// a seeded source so runs repeat.
	Rand func() float64
}

const inlineAttempts = 4

type attempt struct {
	start     time.Time
	end       time.Time
	hedge     bool
	retry     bool
	result    Result
	err       error
	permit    limit.Permit
	hasPermit bool
	inService bool
	served    time.Time // when the server reported it started service
	resend    bool      // replaces an attempt that never reached the dependency
	unsent    bool      // failed without reaching the dependency
	local     bool      // failed in a way that is one replica's, not the dependency's
	permanent bool      // failed with a Permanent outcome
	endSeq    int
	route     *Route // where it went, when its driver says (AttemptRoute); nil = unknown
}

type timerPurpose uint8

const (
	timerNone timerPurpose = iota
	timerHedge
	timerRetry
)

// Call is the decision state machine of one call, with no I/O: it is told what happened
// (the call started, an attempt answered, a timer fired, the caller gave up) and answers with
// what to do (start an attempt, cancel one, arm the timer, finish). Every hedging decision
// lives here or in the Policy, so Do, on goroutines and real timers, and the simulator, on an
// event heap and a virtual clock, make exactly the same decisions.
//
// A Call is not safe for concurrent use: its driver delivers one event at a time. The slice of
// actions a method returns is valid until the next method call. Reset reuses a Call without
// allocating.
type Call struct {
	callState
	attempts []attempt
	inline   [inlineAttempts]attempt
	acts     []Action
	actBuf   [8]Action
}

// callState is everything about a call that Reset zeroes; the buffers above are reused.
type callState struct {
	p         *Policy
	opts      CallOptions
	start     time.Time
	threshold time.Duration
	warm      bool
	hedging   bool // hedges may still start for this call
	crossed   bool // the call reached its hedge threshold
	unproven  bool // it waited at its threshold for evidence that its first attempt is in service
	inflight  int
	retries   int
	lastStart time.Time
	timer     timerPurpose
	timerAt   time.Time
	ticket    breaker.Ticket
	hasTicket bool
	done      bool
	winner    int
	err       error
	ended     int
	unsent    int       // attempts that never reached the dependency, resent at once
	seq       int64     // this call's number in the policy, from 1
	permanent bool      // an attempt failed Permanent: no new attempts start
	next      bool      // the last failure asked for the next attempt at once (Outcome.Next)
	pushback  time.Time // no retry before it: an attempt's Outcome.RetryAfter (gRPC's pushback, Retry-After)
	won       int       // the attempt that succeeded, kept when a panic takes the win away; -1 if none
	panicked  *PanicError
	latest    time.Time // with a deadline and UseDeadline: the last moment a hedge can still answer in time; zero = none
	firing    time.Time // while TimerFired runs: when the timer was due (the state machine's time, not the clock's lateness)
	end       time.Time // when the call finished (done)
}

// NewCall returns a state machine for one call under p. Start it with Start. It panics with
// a hedge: message when p is nil or zero (see [Policy]).
func (p *Policy) NewCall(opts CallOptions) *Call {
	if p == nil || p.bud == nil {
		panic("hedge: NewCall on a nil or zero *Policy (build it with hedge.New)")
	}
	c := new(Call)
	c.Reset(p, opts)
	return c
}

// Reset prepares c for a new call under p, keeping its buffers.
func (c *Call) Reset(p *Policy, opts CallOptions) {
	c.drop()
	// Zeroed in place, then set: a composite literal would be built on the stack and copied.
	c.callState = callState{}
	c.p, c.opts, c.winner, c.won = p, opts, -1, -1
	if cap(c.attempts) == 0 {
		c.attempts = c.inline[:0]
	}
	if cap(c.acts) == 0 {
		c.acts = c.actBuf[:0]
	}
}

// grow appends a zero attempt to c.attempts, in place (an attempt literal would be built
// on the stack and copied), and returns its index.
func (c *Call) grow() int {
	k := len(c.attempts)
	if k < cap(c.attempts) {
		c.attempts = c.attempts[:k+1]
		c.attempts[k] = attempt{}
	} else {
		c.attempts = append(c.attempts, attempt{})
	}
	return k
}

// drop lets go of what the last call referenced (its policy, its errors), touching only
// what that call used, so a pooled Call keeps nothing alive and costs little to reuse. Of
// its attempts it clears the references only: grow zeroes an attempt before it is used again.
func (c *Call) drop() {
	for i := range c.attempts {
		a := &c.attempts[i]
		a.err, a.route = nil, nil
	}
	c.attempts = c.attempts[:0]
	c.acts = c.acts[:0]
	c.p, c.err, c.panicked = nil, nil, nil
}

// Done reports whether the call is over.
func (c *Call) Done() bool { return c.done }

// Winner is the index of the attempt whose answer the call returns, or -1.
func (c *Call) Winner() int { return c.winner }

// Err is the call's error: nil when an attempt won.
func (c *Call) Err() error { return c.err }

// Attempts is how many attempts have started, counting those that never reached the
// dependency.
func (c *Call) Attempts() int { return len(c.attempts) }

// sent is how many attempts count against Config.Attempts: those that reached, or may still
// reach, the dependency.
func (c *Call) sent() int { return len(c.attempts) - c.unsent }

// Log returns the record of the call's attempts, in the order they ended (those still
// running last).
func (c *Call) Log() Log {
	l := Log{Attempts: make([]AttemptRecord, len(c.attempts))}
	end := c.start
	for i := range c.attempts {
		a := &c.attempts[i]
		r := AttemptRecord{Index: i, Hedge: a.hedge, Retry: a.retry, Offset: a.start.Sub(c.start), Result: a.result, Err: a.err}
		if a.result != Running {
			r.Duration = a.end.Sub(a.start)
			if a.end.After(end) {
				end = a.end
			}
		}
		l.Attempts[i] = r
	}
	if c.done {
		// To the call's end, which may come after its last attempt's: a call cancelled, or
		// refused its retry, while it waited out the retry's backoff.
		if c.end.After(end) {
			end = c.end
		}
		l.Duration = end.Sub(c.start)
	}
	slices.SortStableFunc(l.Attempts, func(x, y AttemptRecord) int {
		return c.order(x.Index) - c.order(y.Index)
	})
	return l
}

func (c *Call) order(i int) int {
	if c.attempts[i].result == Running {
		return math.MaxInt32
	}
	return c.attempts[i].endSeq
}

func (c *Call) act(a Action) { c.acts = append(c.acts, a) }

// observe calls the policy's Observer, containing a panic (see settle). Its callers test
// c.p.observe first, so that a call nobody observes does not build its events.
func (c *Call) observe(e Event) {
	defer c.contain()
	c.p.observe(e)
}

// contain recovers a panic raised by user code the state machine calls (the Observer, or a
// breaker or limit callback reached through it) and keeps the first one for settle. It is
// deferred around each such call, so the step that called it finishes its bookkeeping
// (permits, the breaker's ticket, the counters) whatever the callback did.
func (c *Call) contain() {
	if x := recover(); x != nil && c.panicked == nil {
		c.panicked = newPanicError("Observer", x)
	}
}

// settle ends each step of the state machine: when user code panicked during the step, the
// call ends there, every running attempt is cancelled, and the call's error is the
// *PanicError (Do panics with it in the caller's goroutine). Policy-wide state stays
// consistent: every permit and the breaker's ticket are given back as for a cancelled call.
func (c *Call) settle(now time.Time) []Action {
	if c.panicked == nil || c.err == c.panicked {
		return c.acts
	}
	if !c.done {
		c.cancelAll(now)
		c.finishWith(now, c.panicked, breaker.Ignored)
	}
	c.err, c.winner = c.panicked, -1
	return c.acts
}

// Start begins the call at now: it starts the first attempt (or fails fast when the breaker
// is open or the limit full) and arms the hedge timer. A Call starts once: for another call,
// Reset it first. Start panics on a Call without a Policy (not made by [Policy.NewCall] nor
// Reset with one) and on one already started, whose limit permit and breaker ticket a second
// start would take and never give back.
func (c *Call) Start(now time.Time) []Action {
	if c.p == nil || c.p.bud == nil {
		panic("hedge: Call.Start on a Call without a Policy (make it with Policy.NewCall, or Reset it with one)")
	}
	if c.seq != 0 {
		panic("hedge: Call.Start on a Call already started (Reset it for a new call)")
	}
	c.acts = c.acts[:0]
	p := c.p
	c.start = now
	c.seq = p.calls.Add(1)
	if p.brk != nil {
		t, err := c.acquireTicket(now)
		if c.panicked != nil {
			return c.settle(now) // the Observer panicked on the breaker's news: no ticket was taken
		}
		if err != nil {
			c.finish(now, ErrBreakerOpen)
			return c.settle(now)
		}
		c.ticket, c.hasTicket = t, true
	}
	if t := c.opts.Trigger; t != nil {
		c.hedging, c.threshold, c.warm = p.overrideThreshold(now, *t)
	} else if p.cfg.Trigger.kind != triggerNone {
		c.hedging = true
		c.threshold, c.warm = p.threshold()
	}
	if p.cfg.useDeadline && !c.opts.Deadline.IsZero() {
		if s, ok := p.est.Threshold(); ok {
			c.latest = c.opts.Deadline.Add(-s)
		}
	}
	if !c.startAttempt(now, false, false) {
		c.finish(now, ErrLimitExceeded)
		return c.settle(now)
	}
	// A call deposits once its first attempt is on its way: the budget grows with the
	// traffic that reaches the dependency. Calls the open breaker or the full limit refused
	// reach nothing, and during an outage there would be plenty of them, to spend on retries
	// and hedges against a dependency just back.
	p.bud.Deposit(now)
	c.maybeHedge(now)
	return c.settle(now)
}

// acquireTicket asks the breaker for a ticket; a state change it makes (open to half-open)
// reaches the Observer, whose panic is contained.
func (c *Call) acquireTicket(now time.Time) (breaker.Ticket, error) {
	defer c.contain()
	return c.p.brk.Acquire(now)
}

// startAttempt takes a limit permit and records a new attempt. It reports false when the
// limit refused.
func (c *Call) startAttempt(now time.Time, hedge, retry bool) bool {
	p := c.p
	var permit limit.Permit
	if p.lim != nil {
		var ok bool
		if permit, ok = p.lim.Acquire(now); !ok {
			return false
		}
	}
	k := c.grow()
	a := &c.attempts[k]
	a.start, a.hedge, a.retry, a.permit, a.hasPermit = now, hedge, retry, permit, p.lim != nil
	c.inflight++
	c.lastStart = now
	c.act(Action{Kind: StartAttempt, Attempt: k, Hedge: hedge, Retry: retry})
	if c.p.observe != nil {
		c.observe(Event{Kind: AttemptStarted, Time: now, Attempt: k, Hedge: hedge, Retry: retry})
	}
	return true
}

// maybeHedge sends every hedge that is due at now and arms the timer for the next one.
func (c *Call) maybeHedge(now time.Time) {
	for c.hedging && !c.done && c.inflight > 0 && c.sent() < c.p.cfg.attempts && c.inflight < c.p.cfg.maxConcurrent {
		if c.p.cfg.Trigger.kind == triggerTied {
			tie, at := c.tiedDue(now)
			if at.After(now) {
				c.arm(timerHedge, at)
				return
			}
			if c.tryHedge(now, tie) {
				return
			}
			continue
		}
		if c.warm {
			if at := c.byDeadline(c.lastStart.Add(c.threshold)); at.After(now) {
				c.arm(timerHedge, at)
				return
			}
			// A call counts as crossing once it has run its threshold beyond what this
			// process adds itself: a busy client's own delay makes calls cross by the dozen
			// with no queue anywhere.
			if !c.crossed && now.Sub(c.lastStart) >= c.threshold+c.p.selfDelay() {
				c.crossed = true
				if !c.firstTroubled(now) { // a troubled replica's crossing is its own
					c.p.crossedThreshold(now)
				}
			}
			if c.noTimeLeft(now) || c.tooLate(now) {
				c.suppress(now, ReasonNoTimeLeft, c.threshold)
				return
			}
			if ok, at := c.served(now); !ok {
				c.unproven = true
				if !at.IsZero() {
					c.arm(timerHedge, at)
				}
				return
			}
		} else if at := c.lastStart.Add(c.p.cfg.MinimumDelay); at.After(now) {
			// No threshold yet (a cold estimator), but none could be below MinimumDelay: a
			// hedge is due no sooner, and a call that answers before was never going to be
			// hedged, so it is not counted as suppressed.
			c.arm(timerHedge, at)
			return
		}
		if c.tryHedge(now, false) {
			return
		}
	}
}

// tiedDue says when Tied's next copy is due (docs/design.md, "Tied requests"), and whether it
// is a tie. While no running copy has started service, it is a tie, due Adaptive.TieDelay
// after the last copy was sent. Once one has, it is a hedge of that copy, due when the copy has been in
// service for the threshold (and no sooner than one threshold after the last copy was sent);
// without a threshold yet (a cold estimator) it is due at once, and the gates suppress it.
func (c *Call) tiedDue(now time.Time) (tie bool, at time.Time) {
	var served time.Time
	for k := range c.attempts {
		if a := &c.attempts[k]; a.result == Running && a.inService && (served.IsZero() || a.served.Before(served)) {
			served = a.served
		}
	}
	if served.IsZero() {
		return true, c.lastStart.Add(c.p.cfg.tieDelay)
	}
	if !c.warm {
		return false, now
	}
	if c.lastStart.After(served) {
		served = c.lastStart
	}
	return false, served.Add(c.threshold)
}

// served reports whether the call's first attempt has been in service long enough to hedge
// at now (docs/design.md, "Queued or in service": Adaptive.MinimumInService, or StartAware's
// start signal). When it has not, at is
// when to look again; zero means only an event can change the answer (a start signal), or
// nothing will.
func (c *Call) served(now time.Time) (ok bool, at time.Time) {
	p := c.p
	startAware := p.cfg.Trigger.kind == triggerStartAware
	if p.ovt == nil && !startAware || p.serverReports(now) {
		return true, time.Time{}
	}
	// The attempt a hedge would copy: the oldest one running that is not itself a hedge.
	first := -1
	for k := range c.attempts {
		if a := &c.attempts[k]; a.result == Running && !a.hedge {
			first = k
			break
		}
	}
	if first < 0 {
		// The first attempt failed while a copy runs: nothing is known about the copy.
		return false, time.Time{}
	}
	a := &c.attempts[first]
	if startAware && p.signalled(now) {
		if !a.inService {
			// Still queued: its start signal will wake the call. Unless its replica has
			// stopped answering, when no signal will come: once the attempt is lost (see
			// lost), a hedge is due.
			if start, ok := c.firstSilent(now); ok && c.warm {
				if at := start.Add(lostThresholds * c.threshold); at.After(now) {
					return false, at
				}
				return true, time.Time{}
			}
			return false, time.Time{}
		}
		if due := c.byDeadline(a.served.Add(c.threshold)); due.After(now) {
			return false, due
		}
		return true, time.Time{}
	}
	if p.ovt == nil {
		return true, time.Time{}
	}
	if p.calls.Load() == c.seq && p.quiet() {
		// No later call has even started, so none could have overtaken this one: its
		// absence says nothing. A median at its lowest says nothing queues: the call is a
		// straggler (a client with one call in flight, or a thin share of the traffic).
		return true, time.Time{}
	}
	if first != 0 {
		// A retry or a resend started after calls numbered later than this one: their
		// answers say nothing about it.
		return false, time.Time{}
	}
	// Behind several replicas, each with its own queue, a later call answered by another
	// replica says nothing of this one's queue. While the dependency is not quiet and the
	// call's replica shows a queue (replicaQueued: one of its two latest answers was slow),
	// only a later call answered by the same replica shows the call in service
	// (replicaOvertakes). A replica in trouble of its own keeps the evidence of every
	// replica: its slowness is its own, not a queue, and the gates' rule for it decides.
	ovt := p.ovt
	if set, i, ok := a.route.replica(); ok && set.Len() > 1 && !p.quiet() && !a.route.troubled(now) && p.replicaQueued(set, i) {
		if start, silent := c.firstSilent(now); silent && c.warm {
			// Its replica has answered nothing since it was sent, so nothing shows it in
			// service there; for a client with a thin share of the traffic that is most
			// calls at the threshold, queued or not. Once it is lost, its hedge is due
			// (Call.lost), as the backlog gate's rule for it says.
			if at := start.Add(lostThresholds * c.threshold); at.After(now) {
				return false, at
			}
			return true, time.Time{}
		}
		if r := p.replicaOvertakes(set, i); r != nil {
			ovt = &r.overtakes
		} else {
			return false, time.Time{}
		}
	}
	// A busy client is slow to read answers as well: a call it has not yet seen answered
	// may be done at the server, so the time in service it must show grows by how late
	// the client's timers fire.
	need := p.cfg.inService + time.Duration(p.lag.Load())
	d, overtaken := ovt.since(c.seq, now)
	switch {
	case !overtaken:
		// Nothing later has answered yet: look again soon. The wait bounds how late a hedge
		// can be once the call is overtaken.
		return false, now.Add(max(need/2, time.Millisecond))
	case d < need:
		return false, now.Add(need - d)
	}
	return true, time.Time{}
}

// byDeadline is when a hedge normally due at due falls due for a call with a deadline
// (Adaptive.UseDeadline): no later than the last moment a copy can still answer in time, when
// that moment is still to come for the attempt it would copy, and never sooner than
// MinimumDelay after that attempt, the smallest hedge delay there is.
func (c *Call) byDeadline(due time.Time) time.Time {
	if c.latest.IsZero() || !c.latest.Before(due) || c.latest.Before(c.lastStart) {
		return due
	}
	if floor := c.lastStart.Add(c.p.cfg.MinimumDelay); c.latest.Before(floor) {
		if floor.Before(due) {
			return floor
		}
		return due
	}
	return c.latest
}

// noTimeQuantile: a hedge is refused (ReasonNoTimeLeft) when its call's deadline leaves less
// than this quantile of attempt latencies, the time all but one copy in a hundred take.
// Measured on the reference model with a 30ms deadline (seeds 1-3, 100,000 calls, loads
// 30-70 %, both cancellation modes): refusing below the 0.05-quantile lost more rescues than
// it saved load (up to 0.007 % more failed calls than the recommended default, at 50 % load);
// below the 0.01-quantile at most 0.002 % more, and 10-17 % fewer at 30 % load. Refusing
// only below the fastest answer (the 0-quantile) sent copies that lost their race, and the
// win-rate loop then held back the ones that would have won: up to 0.085 % more failed calls
// than the recommended default at 30 % load.
const noTimeQuantile = 0.01

// noTimeLeft reports whether the hedge that falls due at now would come too late: its call's
// deadline leaves a copy less than the noTimeQuantile of attempt latencies, so nearly every
// copy would answer after its caller stopped waiting. Between the last moment (latest, which
// leaves the q-quantile) and that one a copy may still answer in time, and it is sent. A
// hedge due by its timer counts from the timer's time, so a driver whose timer fires late (a
// busy process) does not lose the hedge the timer was armed for. The low quantile sums the
// estimator's window, so it is read only for a call already past its last moment, which few
// are; a window emptied by a quiet spell refuses only a call whose deadline has passed.
func (c *Call) noTimeLeft(now time.Time) bool {
	if c.latest.IsZero() {
		return false
	}
	if !c.firing.IsZero() {
		now = c.firing
	}
	if !now.After(c.latest) {
		return false
	}
	fast, _ := c.p.est.Quantile(now, noTimeQuantile)
	return c.opts.Deadline.Sub(now) < fast
}

// lateQuantile: without Adaptive.UseDeadline, a hedge is refused (ReasonNoTimeLeft) when its
// call's deadline leaves a copy less than this quantile of attempt latencies, unless the
// win-rate loop last found hedges winning (see tooLate). Without the loop there is no such
// refusal.
//
// Measured on the reference model with a 50 ms deadline (100,000 calls, seeds 1-3): without
// the rule, recommended failed more calls than no hedge at 95 % load with cancellation ignored
// on every seed (19.11, 28.92 and 24.32 % against 18.97, 28.42 and 24.14 %). Its hedges there
// fell due 38-45 ms into a call, with 5-12 ms left against a median of 11-15 ms, and won about
// one race in forty; the loop, which judges a quarter-minute of hedges at a time, held back
// only some. With the rule every seed fails as many calls as no hedge (18.97, 28.42, 24.14 %).
// The 0.3-quantile (the loop's Floor) still failed seed 2 (28.72 %: hedges with 11-12 ms
// left, as a spell began in which every call ran into its deadline). Refusing below the median
// whatever the loop found cost rescues with a 30 ms deadline at 50-70 % load (1.19 → 1.42 %
// failed at 50 %, seed 1), where such copies win.
//
// Even while the loop finds hedges winning, a copy whose deadline leaves it less than the
// loop's Floor-quantile of attempt latencies is refused: less than Floor of a chance to
// answer in time, the least the loop asks of any hedge. Measured on the same model, seeds
// 1-9: with the 50 ms deadline at 95 % load, cancellation ignored, the loop found the hedges
// of the spells between bursts winning, and let copies with 5-7 ms left (against a median of
// 10-14 ms) through; seeds 5, 6, 8 and 9 failed more calls than no hedge (25.949 against
// 25.717 % on seed 5, 46.117 against 45.767 % on seed 6), and with the Floor rule none does.
// With a 30 ms deadline it also ended the two points that failed more calls than no hedge
// (85 %, ignored, seeds 5 and 6) and cost some rescues where such copies win: at 50 % load
// 1.21-1.29 % of calls failed before, 1.28-1.38 % after, against no hedge's 1.88-2.05 %.
const lateQuantile = 0.5

// tooLate reports whether the hedge that falls due at now would most likely come too late,
// for a policy that does not hedge by deadlines (Adaptive.UseDeadline, whose own rule is
// noTimeLeft): its call's deadline leaves a copy less than the lateQuantile of attempt
// latencies, and the win-rate loop has not found, in its last decision within its Window,
// that hedges win. More likely than not, such a copy answers after its caller stopped
// waiting, and it comes where calls run close to their deadline, which is where the queue is
// long: it is load, sent when load hurts most, and the loop, which judges hedges only by the
// dozen, learns that too late. Where late copies do win (a tight deadline on a dependency
// with room to spare), the loop says so and they are sent, if the deadline leaves them the
// loop's Floor-quantile at least. A hedge due by its timer counts
// from the timer's time, as in noTimeLeft. The quantile sums the estimator's window, so it is
// read only when the deadline leaves less than the threshold, which few calls reach.
func (c *Call) tooLate(now time.Time) bool {
	p := c.p
	if p.cfg.useDeadline || p.est == nil || p.win == nil || c.opts.Deadline.IsZero() {
		return false
	}
	if !c.firing.IsZero() {
		now = c.firing
	}
	left := c.opts.Deadline.Sub(now)
	if left >= c.threshold {
		return false
	}
	q, ok := p.est.Quantile(now, lateQuantile)
	if !ok || left >= q {
		return false
	}
	if !p.win.Winning(now) {
		return true
	}
	f, ok := p.est.Quantile(now, p.win.Floor())
	return ok && left < f
}

func (c *Call) arm(purpose timerPurpose, at time.Time) {
	if c.timer == purpose && c.timerAt.Equal(at) {
		return
	}
	c.timer, c.timerAt = purpose, at
	c.act(Action{Kind: ArmTimer, At: at})
}

// gate asks the gates (docs/design.md, "The gates"), in order, whether a hedge may start now, and
// returns the first reason to refuse. A tie (Tied, while no copy has started) needs no
// threshold, so the cold gate does not apply to it.
func (c *Call) gate(now time.Time, tie bool) Reason {
	p := c.p
	if c.opts.Repeatable == NotRepeatable {
		return ReasonNotRepeatable
	}
	if p.brk != nil {
		if c.ticket.Trial() || c.breakerState(now) != breaker.Closed {
			return ReasonBreaker
		}
		if p.brk.Degraded(now) {
			return ReasonErrorRate
		}
	}
	if !c.warm && !tie {
		return ReasonCold
	}
	// The servers' reports, when fresh, decide over inference (serverload.go). A call whose
	// first attempt is lost (its replica has answered nothing for lostThresholds thresholds
	// since, while another replica answered) waits for an answer that may never come: its
	// hedge goes to another replica whatever the backlog. So does one whose server said it
	// started serving the first attempt on a replica in trouble of its own (StartAware): the
	// slow work is under way there, and the copy is one ordinary request elsewhere. A replica
	// that is only slow, or behind a queue, still answers, and without a start signal a call
	// overtaken by calls on other replicas may still be queued on it: a hedge away from it
	// would add load to every replica the backlog has reached.
	// With reports, a first attempt is lost only while its own server has stopped reporting
	// too: one that still reports is answering, however slowly, and its queue is in the
	// reports the gate reads.
	if long, decided := p.serverGate(now, c); decided && long && !c.lostUnreported(now) || !decided && c.backlogged(now) && !c.lost(now) && !c.servedOnTroubled(now) {
		return ReasonBacklog
	}
	if p.bud.Balance(now) < 1 {
		return ReasonBudget
	}
	if p.cfg.NeverHedgeSheddable && c.opts.Criticality == Sheddable {
		return ReasonSheddable
	}
	if p.win != nil && !p.win.Admit(now) {
		return ReasonWinRate
	}
	if p.overloaded(now) {
		return ReasonOverload
	}
	return ReasonNone
}

// backlogged reports whether the backlog gate sees a backlog for this call: the policy's
// median or crossings show one (Policy.backlogged), or half its latest answers were slow
// (Policy.slowAnswers) and the call's first attempt is not waiting on a replica that has
// stopped answering. Slow answers come from the replicas that do answer: they say nothing of
// one that answers none (replica.Set.SilentSince), whose calls the gate defers until they
// are lost, as before.
func (c *Call) backlogged(now time.Time) bool {
	p := c.p
	if p.backlogged(now) {
		return true
	}
	if !p.slowAnswers() {
		return false
	}
	_, silent := c.firstSilent(now)
	return !silent
}

// breakerState reads the breaker's state, which may turn it half-open; that change reaches
// the Observer, whose panic is contained (the state then reads as open).
func (c *Call) breakerState(now time.Time) (s breaker.State) {
	s = breaker.Open
	defer c.contain()
	return c.p.brk.State(now)
}

// tryHedge starts a hedge (a tie, with Tied while no copy has started) if the gates, the
// limit and the budget allow; otherwise it records the suppression and stops hedging for this
// call, which then waits exactly as it would have without hedging. One refusal is deferred
// instead (deferred is true, the timer armed): the backlog's, while the first attempt's
// replica has answered nothing since the attempt was sent but the attempt is not yet lost.
func (c *Call) tryHedge(now time.Time, tie bool) (deferred bool) {
	return c.tryHedgeAsked(now, tie, false)
}

// tryHedgeAsked is tryHedge; asked says a failure asked for the hedge at once (Outcome.Next),
// whose events then carry as Delay how long after the latest attempt it came, not a
// threshold the call did not wait for.
func (c *Call) tryHedgeAsked(now time.Time, tie, asked bool) (deferred bool) {
	p := c.p
	delay := c.threshold
	switch {
	case asked:
		delay = now.Sub(c.lastStart)
	case tie:
		delay = p.cfg.tieDelay
	case !c.warm:
		delay = p.cfg.MinimumDelay // the earliest a hedge could have been due
	default:
		delay = c.byDeadline(c.lastStart.Add(delay)).Sub(c.lastStart) // due sooner by the deadline
	}
	reason := c.gate(now, tie)
	if reason == ReasonBacklog && !tie {
		if _, decided := p.serverGate(now, nil); decided && c.firstReported(now) {
			// The servers' reports decided, the first attempt's server among them: it is
			// answering, and its queue is in the reports.
		} else if start, ok := c.firstSilent(now); ok && c.warm {
			if at := start.Add(lostThresholds * c.threshold); at.After(now) {
				// Its replica may have stopped answering: look again when it would count as lost.
				c.arm(timerHedge, at)
				return true
			}
		}
	}
	if reason == ReasonNone {
		if !p.bud.TryWithdraw(now) {
			reason = ReasonBudget
		} else if !c.startAttempt(now, true, false) {
			// The limit sits inside the hedge: the hedge was funded, and its attempt refused.
			// The withdrawal stands; a client whose limit is full should hedge less, not more.
			reason = ReasonLimit
		}
	}
	if reason != ReasonNone {
		c.suppress(now, reason, delay)
		return false
	}
	p.hedgesStarted.Add(1)
	if p.win != nil {
		p.win.Started(now)
	}
	k := len(c.attempts) - 1
	if c.p.observe != nil {
		c.observe(Event{Kind: HedgeStarted, Time: now, Attempt: k, Hedge: true, Delay: delay})
	}
	return false
}

// suppress records that reason refused the call's hedge, due after delay, and stops hedging
// for the call, which then waits exactly as it would have without hedging.
func (c *Call) suppress(now time.Time, reason Reason, delay time.Duration) {
	c.hedging = false
	c.p.suppressed[reason].Add(1)
	if c.p.observe != nil {
		c.observe(Event{Kind: HedgeSuppressed, Time: now, Attempt: len(c.attempts), Delay: delay, Reason: reason})
	}
}

// TimerFired tells the call its timer went off at now. Early or stale firings are ignored.
func (c *Call) TimerFired(now time.Time) []Action {
	c.acts = c.acts[:0]
	if c.done || c.timer == timerNone || now.Before(c.timerAt) {
		return c.acts
	}
	purpose := c.timer
	c.timer = timerNone
	c.p.noteLateness(now, now.Sub(c.timerAt))
	switch purpose {
	case timerHedge:
		c.firing = c.timerAt
		c.maybeHedge(now)
		c.firing = time.Time{}
	case timerRetry:
		if !c.startAttempt(now, false, true) {
			c.fail(now, ErrLimitExceeded)
			return c.settle(now)
		}
		c.maybeHedge(now)
	}
	return c.settle(now)
}

// AttemptDone tells the call that attempt k answered at now with outcome o. Answers from
// attempts already cancelled or discarded are ignored.
func (c *Call) AttemptDone(now time.Time, k int, o Outcome) []Action {
	c.acts = c.acts[:0]
	if c.done || k < 0 || k >= len(c.attempts) || c.attempts[k].result != Running {
		return c.acts
	}
	p := c.p
	a := &c.attempts[k]
	a.end = now
	c.inflight--
	c.ended++
	a.endSeq = c.ended
	dur := now.Sub(a.start)
	if o.Class != Success && o.Unsent && c.unsent < p.cfg.attempts && !c.permanent {
		c.resend(now, k, o)
		return c.settle(now)
	}
	if o.Class == Success {
		a.result = OK
		c.release(now, a, limit.Success)
		slow := p.recordLatency(now, dur, true)
		if p.ovt != nil {
			p.ovt.answered(c.seq, now)
			if set, i, ok := a.route.replica(); ok && set.Len() > 1 {
				if r := p.replicaOvertakes(set, i); r != nil {
					r.answered(c.seq, now)
					r.noteAnswer(slow)
				}
			}
		}
		if c.p.observe != nil {
			c.observe(Event{Kind: AttemptFinished, Time: now, Attempt: k, Hedge: a.hedge, Retry: a.retry, Duration: dur})
		}
		c.winner, c.won = k, k
		if a.hedge {
			p.hedgesWon.Add(1)
			if p.win != nil {
				p.win.Won(now)
			}
			if c.p.observe != nil {
				c.observe(Event{Kind: HedgeWon, Time: now, Attempt: k, Hedge: true, Duration: dur})
			}
		}
		c.discardOthers(now, true)
		c.finish(now, nil)
		return c.settle(now)
	}
	a.result = Failed
	if o.Err == nil {
		o.Err = errNoAttemptError
	}
	a.err = o.Err
	a.unsent = o.Unsent
	a.local = o.Unsent || o.Ejected
	a.permanent = o.Class == Permanent
	if o.RetryAfter > 0 && now.Add(o.RetryAfter).After(c.pushback) {
		c.pushback = now.Add(o.RetryAfter)
	}
	if o.Overload {
		c.release(now, a, limit.Dropped)
		p.noteOverload(now, o.RetryAfter)
	} else {
		c.release(now, a, limit.Ignored)
	}
	if c.p.observe != nil {
		c.observe(Event{Kind: AttemptFinished, Time: now, Attempt: k, Hedge: a.hedge, Retry: a.retry, Duration: dur, Err: o.Err})
	}
	switch {
	case o.Unsent:
		// Resent as often as a call may: the dependency looks unreachable from here, and a
		// retry after a backoff would only make the caller wait for the same answer.
		if c.inflight > 0 {
			c.maybeHedge(now)
		} else {
			c.fail(now, nil)
		}
	case o.Class == Permanent:
		// The dependency gave a final answer: nothing new starts (no hedge, no retry). An
		// attempt still running may yet succeed, and a success wins, so the call waits for
		// it; a fast final failure from one copy (a stale replica's 404) must not cancel a
		// slower copy that would have answered.
		c.permanent, c.hedging = true, false
		if o.Commit {
			c.discardOthers(now, false)
		}
		if c.inflight == 0 {
			c.fail(now, nil)
		}
	case c.inflight > 0:
		if o.Next && c.hedging && c.sent() < p.cfg.attempts && c.inflight < p.cfg.maxConcurrent {
			c.tryHedgeAsked(now, false, true)
		}
		c.maybeHedge(now)
	default:
		c.next = o.Next
		c.retryOrFail(now, k)
	}
	return c.settle(now)
}

// resend replaces attempt k, which never reached the dependency, with a new attempt started
// at once: nothing was sent, so sending it now is not a repeat (even for a call that is not
// repeatable), spends no budget, and does not count against Attempts; the driver sends it to
// another replica. The new attempt takes over k's limit permit and its place as a hedge or a
// retry, and the next hedge is due one threshold after it. A call resends at most Attempts
// times, so that a dependency none of whose replicas can be reached fails its calls fast.
func (c *Call) resend(now time.Time, k int, o Outcome) {
	a := &c.attempts[k]
	a.result, a.err, a.unsent, a.local = Failed, o.Err, true, true
	permit, hasPermit, hedge, retry := a.permit, a.hasPermit, a.hedge, a.retry
	a.hasPermit = false
	if c.p.observe != nil {
		c.observe(Event{Kind: AttemptFinished, Time: now, Attempt: k, Hedge: hedge, Retry: retry, Duration: now.Sub(a.start), Err: o.Err})
	}
	c.unsent++
	j := len(c.attempts)
	c.attempts = append(c.attempts, attempt{start: now, hedge: hedge, retry: retry, resend: true, permit: permit, hasPermit: hasPermit})
	c.inflight++
	c.lastStart = now
	c.act(Action{Kind: StartAttempt, Attempt: j, Hedge: hedge, Retry: retry, Resend: true})
	if c.p.observe != nil {
		c.observe(Event{Kind: AttemptStarted, Time: now, Attempt: j, Hedge: hedge, Retry: retry})
	}
	c.maybeHedge(now)
}

// retryOrFail schedules a sequential retry after a failure with nothing else in flight, or
// ends the call when no retry may be made; failed is the attempt whose failure left nothing in
// flight.
func (c *Call) retryOrFail(now time.Time, failed int) {
	p := c.p
	switch {
	case c.permanent:
		c.fail(now, nil) // an attempt's final answer: no retry
	case c.sent() >= p.cfg.attempts:
		c.fail(now, nil)
	case c.opts.Repeatable == NotRepeatable:
		c.fail(now, nil)
	case c.hasTicket && c.ticket.Trial():
		c.fail(now, nil) // a half-open trial gets one attempt
	default:
		// With a deadline the delay is known before the budget is asked: a retry that could
		// start only once the caller has stopped waiting is not made, and spends nothing.
		// (Without one the budget is asked first, so that a refused retry draws no jitter.)
		var d time.Duration
		deadline := !c.opts.Deadline.IsZero()
		if deadline {
			if d = c.retryDelay(now); !now.Add(d).Before(c.opts.Deadline) {
				c.fail(now, ErrNoTimeForRetry)
				return
			}
		}
		if !p.bud.TryWithdraw(now) {
			c.fail(now, ErrBudgetExhausted)
			return
		}
		if !deadline {
			d = c.retryDelay(now)
		}
		c.retries++
		p.retries.Add(1)
		if c.p.observe != nil {
			c.observe(Event{Kind: RetryScheduled, Time: now, Attempt: failed, Delay: d})
		}
		c.arm(timerRetry, now.Add(d))
	}
}

// retryDelay is how long the call waits before its next sequential retry: its backoff, none
// when the failure asked for the next attempt at once, and never sooner than the server's
// pushback or Retry-After, since a retry sooner, to whichever replica, would only add to the
// load of a server that said when it will take another request.
func (c *Call) retryDelay(now time.Time) time.Duration {
	d := c.backoff()
	if c.next {
		d = 0
	}
	return max(d, c.pushback.Sub(now))
}

func (c *Call) backoff() time.Duration {
	b := c.p.cfg.backoff
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(c.retries))
	if d > float64(b.Maximum) {
		d = float64(b.Maximum)
	}
	if b.Jitter > 0 {
		u := 0.0
		if c.opts.Rand != nil {
			u = c.opts.Rand()
		} else {
			u = rand.Float64()
		}
		d -= d * b.Jitter * u
	}
	if d >= float64(b.Maximum) {
		// Not converted: a Maximum near MaxInt64 (no cap) is 2^63 as a float64, which as a
		// Duration wraps round to the most negative one, and the longest wait would be none.
		return b.Maximum
	}
	return time.Duration(d)
}

// AttemptStartedService tells the call that a server began work on attempt k at now. With
// the Tied trigger the other copies, still queued, are cancelled: they can no longer help,
// and a hedge of the copy in service becomes due once it has been in service for the
// threshold. With StartAware a hedge becomes due once the first attempt has been in service
// for the threshold. Other triggers ignore it: they make no use of the server's help.
func (c *Call) AttemptStartedService(now time.Time, k int) []Action {
	c.acts = c.acts[:0]
	if c.done || k < 0 || k >= len(c.attempts) || c.attempts[k].result != Running || c.attempts[k].inService {
		return c.acts
	}
	c.attempts[k].inService = true
	c.attempts[k].served = now
	switch c.p.cfg.Trigger.kind {
	case triggerStartAware:
		c.p.noteSignal(now)
		if !c.attempts[k].hedge {
			c.maybeHedge(now)
		}
	case triggerTied:
		for j := range c.attempts {
			if a := &c.attempts[j]; j != k && a.result == Running && !a.inService {
				c.discard(now, j, false)
			}
		}
		c.maybeHedge(now)
	}
	return c.settle(now)
}

// Cancel tells the call its caller gave up at now, with cause (usually ctx.Err()). Every
// attempt is cancelled and the call finishes with cause; a nil cause is context.Canceled, since
// a call that ends with a nil Err reads as won.
func (c *Call) Cancel(now time.Time, cause error) []Action {
	c.acts = c.acts[:0]
	if c.done {
		return c.acts
	}
	if cause == nil {
		cause = context.Canceled
	}
	c.cancelAll(now)
	c.finishWith(now, cause, breaker.Ignored)
	return c.settle(now)
}

// cancelAll cancels every running attempt: the caller gave up.
func (c *Call) cancelAll(now time.Time) {
	for j := range c.attempts {
		a := &c.attempts[j]
		if a.result != Running {
			continue
		}
		a.result, a.end = Cancelled, now
		c.inflight--
		c.ended++
		a.endSeq = c.ended
		c.release(now, a, limit.Ignored)
		c.act(Action{Kind: CancelAttempt, Attempt: j})
	}
}

// discardOthers cancels every running attempt: the call has its answer.
func (c *Call) discardOthers(now time.Time, sample bool) {
	for j := range c.attempts {
		if c.attempts[j].result == Running {
			c.discard(now, j, sample)
		}
	}
}

// discard cancels running attempt j as a loser. With sample, the time it had run is fed to
// the estimator: it is a censored sample, known only to be at least that long, and leaving it
// out would bias the quantile low and hedge more than 1-q of calls.
func (c *Call) discard(now time.Time, j int, sample bool) {
	a := &c.attempts[j]
	a.result, a.end = Discarded, now
	c.inflight--
	c.ended++
	a.endSeq = c.ended
	dur := now.Sub(a.start)
	c.release(now, a, limit.Ignored)
	if sample {
		c.p.recordLatency(now, dur, false)
	}
	c.act(Action{Kind: CancelAttempt, Attempt: j, Slow: sample && c.warm && c.threshold > 0 && dur >= c.threshold})
	if c.p.observe != nil {
		c.observe(Event{Kind: AttemptDiscarded, Time: now, Attempt: j, Hedge: a.hedge, Retry: a.retry, Duration: dur})
	}
}

func (c *Call) release(now time.Time, a *attempt, o limit.Outcome) {
	if a.hasPermit {
		a.hasPermit = false
		c.releasePermit(now, a.permit, o)
	}
}

// releasePermit gives a permit back; a limit change it causes reaches the Observer, whose
// panic is contained.
func (c *Call) releasePermit(now time.Time, p limit.Permit, o limit.Outcome) {
	defer c.contain()
	c.p.lim.Release(now, p, o)
}

// fail ends the call with every attempt's error, naming the most informative one: a
// Permanent failure (the dependency's own final answer) over retriable ones, and among
// equals the last to answer. The breaker protects the dependency, not one replica: a call
// counts as a failure only when an attempt failed at a replica in good standing; one whose
// attempts all failed before reaching the dependency, or at replicas that outlier detection
// has ejected, says nothing about the dependency and is ignored. A call ended by a final
// answer counts as a success: the dependency responded. When no attempt reached the
// dependency, the cause is [ErrUnreachable].
func (c *Call) fail(now time.Time, cause error) {
	errs := make([]error, 0, len(c.attempts))
	o, unsent := breaker.Ignored, 0
	var main error
	best := -1
	for i := range c.attempts {
		a := &c.attempts[i]
		if a.result == Failed && !a.local {
			o = breaker.Failure
		}
		if a.unsent {
			unsent++
		}
		if a.err == nil {
			continue
		}
		errs = append(errs, a.err)
		if best < 0 || a.permanent && !c.attempts[best].permanent ||
			a.permanent == c.attempts[best].permanent && a.endSeq > c.attempts[best].endSeq {
			best, main = i, a.err
		}
	}
	if cause == nil && unsent > 0 && unsent == len(errs) {
		cause = ErrUnreachable
	}
	var err error
	switch {
	case len(errs) == 0 && cause != nil:
		err = cause
	default:
		err = &AttemptsError{Attempts: errs, Err: main, Cause: cause}
	}
	if c.permanent {
		o = breaker.Success // a final answer from a responsive dependency
	}
	c.finishWith(now, err, o)
}

func (c *Call) finish(now time.Time, err error) {
	o := breaker.Success // a winner, or a final answer from a responsive dependency
	if err == ErrLimitExceeded || err == ErrBreakerOpen {
		o = breaker.Ignored
	}
	c.finishWith(now, err, o)
}

func (c *Call) finishWith(now time.Time, err error, o breaker.Outcome) {
	if c.unproven && c.hedging && !c.hedged() {
		// It waited at its threshold for in-service evidence that never came: say so, or
		// a policy that never hedges (a sequential client) gives no reason at all.
		c.hedging = false
		c.p.suppressed[ReasonNoEvidence].Add(1)
		if c.p.observe != nil {
			c.observe(Event{Kind: HedgeSuppressed, Time: now, Attempt: len(c.attempts), Delay: c.threshold, Reason: ReasonNoEvidence})
		}
	}
	c.done = true
	c.end = now
	c.timer = timerNone
	c.err = err
	if c.hasTicket {
		c.hasTicket = false
		c.releaseTicket(now, o)
	}
	c.act(Action{Kind: Finish, Attempt: c.winner})
	if c.p.observe != nil {
		e := Event{Kind: CallFinished, Time: now, Attempt: c.winner, Duration: now.Sub(c.start), Err: err}
		if c.panicked != nil {
			// An Observer (or a callback reaching it) panicked earlier in this step: the call
			// ends with that panic (settle), not with what the step decided.
			e.Attempt, e.Err = -1, c.panicked
		}
		c.observe(e)
	}
}

// hedged reports whether a hedge of the call started.
func (c *Call) hedged() bool {
	for i := range c.attempts {
		if c.attempts[i].hedge {
			return true
		}
	}
	return false
}

// releaseTicket gives the breaker's ticket back; a state change it causes reaches the
// Observer, whose panic is contained.
func (c *Call) releaseTicket(now time.Time, o breaker.Outcome) {
	defer c.contain()
	c.p.brk.Release(now, c.ticket, o)
}

// lostThresholds: a first attempt whose replica has answered nothing for lostThresholds hedge
// thresholds since the attempt was sent, while another replica answered, counts as lost: its
// hedge passes the backlog gate, since without one the call waits for an answer that may never
// come. A replica that pauses, or is only slow, answers within that time.
const lostThresholds = 4

// lost reports whether the call's first attempt counts as lost at now (lostThresholds).
func (c *Call) lost(now time.Time) bool {
	start, ok := c.firstSilent(now)
	return ok && c.warm && !now.Before(start.Add(lostThresholds*c.threshold))
}

// servedOnTroubled reports whether the call's first attempt is in service, by its server's
// word, on a replica in trouble of its own.
func (c *Call) servedOnTroubled(now time.Time) bool {
	if c.p.cfg.Trigger.kind != triggerStartAware || !c.p.signalled(now) {
		return false // only StartAware reads start signals
	}
	inService, _ := c.firstOnTroubled(now)
	return inService
}
