package hedge

import "time"

// EventKind names an event. The names are stable: users put them on dashboards.
type EventKind uint8

const (
	// AttemptStarted: an attempt was sent to the dependency (Attempt, Hedge, Retry).
	AttemptStarted EventKind = iota + 1
	// AttemptFinished: an attempt answered (Attempt, Duration, Err; Err is nil on success).
	AttemptFinished
	// HedgeStarted: a hedge was sent because the call outlived the threshold (Delay; for a
	// tie of Tied, Adaptive.TieDelay; for a hedge a failure asked for at once, Outcome.Next,
	// how long after the latest attempt's start it came).
	HedgeStarted
	// HedgeWon: a hedge answered first (Attempt, Duration).
	HedgeWon
	// AttemptDiscarded: an attempt lost the race and was cancelled (Attempt, Hedge, Retry,
	// Duration: how long it had run when discarded). Any loser is discarded, the first
	// attempt as well as a hedge (Hedge says which): a hedge that wins discards the first.
	// (It was named HedgeDiscarded; the event and its meaning are unchanged.)
	AttemptDiscarded
	// HedgeSuppressed: a gate refused a hedge (Delay, Reason). It comes when the threshold
	// fires; while the estimator is cold there is no threshold, and it comes once the call
	// has run MinimumDelay, the lowest any threshold can be, with that Delay (docs/design.md,
	// "The gates"): a call that answers sooner was not due a hedge, and is not counted.
	HedgeSuppressed
	// RetryScheduled: a failed attempt will be retried after Delay (Attempt is the failed one).
	RetryScheduled
	// CallFinished: the call is over (Duration, Err; Attempt is the winner or -1).
	CallFinished
	// LimitChanged: the adaptive concurrency limit moved (Limit).
	LimitChanged
	// BreakerChanged: the circuit breaker changed state (State).
	BreakerChanged
)

var eventNames = [...]string{
	AttemptStarted:   "AttemptStarted",
	AttemptFinished:  "AttemptFinished",
	HedgeStarted:     "HedgeStarted",
	HedgeWon:         "HedgeWon",
	AttemptDiscarded: "AttemptDiscarded",
	HedgeSuppressed:  "HedgeSuppressed",
	RetryScheduled:   "RetryScheduled",
	CallFinished:     "CallFinished",
	LimitChanged:     "LimitChanged",
	BreakerChanged:   "BreakerChanged",
}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "EventKind(?)"
}

// Reason says which gate suppressed a hedge (docs/design.md, "The gates"). Its text form is
// one word, snake case ("win_rate"), so that it can be a metric label or a log value as is.
type Reason uint8

const (
	ReasonNone Reason = iota
	// ReasonNotRepeatable: the call may not be sent twice (a POST without an idempotency key).
	ReasonNotRepeatable
	// ReasonBreaker: the circuit breaker is not closed; a half-open trial is never hedged.
	ReasonBreaker
	// ReasonErrorRate: the breaker is closed but degraded: the dependency's error rate reached
	// breaker.Config.DegradedAt of the breaker's trip point.
	ReasonErrorRate
	// ReasonCold: the latency estimator has fewer than Adaptive.MinimumSamples samples; reported once
	// the call has run MinimumDelay.
	ReasonCold
	// ReasonBacklog: the dependency is slow as a whole (Adaptive.BacklogRatio): the recent
	// median latency is well above its recent lowest, or far more calls than 1-q reach their
	// threshold. A hedge would wait in the queue and feed it.
	ReasonBacklog
	// ReasonBudget: the budget shared with retries cannot fund another attempt.
	ReasonBudget
	// ReasonSheddable: the call's criticality is Sheddable.
	ReasonSheddable
	// ReasonWinRate: hedges have stopped winning, and the win-rate loop turned this one away.
	ReasonWinRate
	// ReasonOverload: the dependency signalled overload within the cool-down.
	ReasonOverload
	// ReasonLimit: the adaptive concurrency limit had no permit for the hedge.
	ReasonLimit
	// ReasonNoEvidence: the call reached its threshold, but nothing showed that its first
	// attempt was being served rather than queued (Adaptive.MinimumInService): no call that
	// started after it answered first, no start signal came, and, for a call that no later
	// call could have overtaken, the recent median was not near its lowest. It waited, as
	// without hedging, and is reported when it ends with no hedge sent. A client with one
	// call in flight at a time has no later call to overtake its own, so the default hedges
	// it only while its recent median stays within 1.1 × its lowest: while a queue forms, its
	// suppressions carry this reason (see the README, "When it hedges").
	ReasonNoEvidence
	// ReasonNoTimeLeft: the call's deadline was too close for a copy to answer in time
	// (Adaptive.UseDeadline): when its hedge fell due, less time was left than nearly every
	// attempt takes (the live 0.01-quantile of attempt latencies); without UseDeadline, less
	// than the median attempt latency while the win-rate loop had not found hedges winning.
	// The call waits for its first attempt, as without hedging.
	ReasonNoTimeLeft
	numReasons
)

var reasonNames = [...]string{
	ReasonNone:          "none",
	ReasonNotRepeatable: "not_repeatable",
	ReasonBreaker:       "breaker",
	ReasonErrorRate:     "error_rate",
	ReasonCold:          "cold",
	ReasonBacklog:       "backlog",
	ReasonBudget:        "budget",
	ReasonSheddable:     "sheddable",
	ReasonWinRate:       "win_rate",
	ReasonOverload:      "overload",
	ReasonLimit:         "limit",
	ReasonNoEvidence:    "no_evidence",
	ReasonNoTimeLeft:    "no_time_left",
}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every suppression reason, in gate order.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonNotRepeatable; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Event is one decision or observation of a call, delivered to Config.Observer. Which fields
// are set depends on Kind (see the EventKind constants). Events are passed by value and the
// observer runs synchronously in the goroutine that drives the call: keep it fast.
type Event struct {
	Kind     EventKind
	Time     time.Time
	Attempt  int
	Hedge    bool
	Retry    bool
	Delay    time.Duration
	Duration time.Duration
	Reason   Reason
	Err      error
	Limit    int
	State    string
}
