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
	// tie of Tied, Config.TieDelay).
	HedgeStarted
	// HedgeWon: a hedge answered first (Attempt, Duration).
	HedgeWon
	// HedgeDiscarded: an attempt lost the race and was cancelled (Attempt, Duration: how long
	// it had run when discarded).
	HedgeDiscarded
	// HedgeSuppressed: a gate refused a hedge (Delay, Reason). It comes when the threshold
	// fires; while the estimator is cold there is no threshold, and it comes once the call
	// has run MinimumDelay, the lowest any threshold can be, with that Delay (see
	// docs/design.md): a call that answers sooner was not due a hedge, and is not counted.
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
	AttemptStarted:  "AttemptStarted",
	AttemptFinished: "AttemptFinished",
	HedgeStarted:    "HedgeStarted",
	HedgeWon:        "HedgeWon",
	HedgeDiscarded:  "HedgeDiscarded",
	HedgeSuppressed: "HedgeSuppressed",
	RetryScheduled:  "RetryScheduled",
	CallFinished:    "CallFinished",
	LimitChanged:    "LimitChanged",
	BreakerChanged:  "BreakerChanged",
}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "EventKind(?)"
}

// Reason says which gate suppressed a hedge.
type Reason uint8

const (
	ReasonNone Reason = iota
	// ReasonNotRepeatable: the call may not be sent twice (a POST without an idempotency key).
	ReasonNotRepeatable
	// ReasonBreaker: the circuit breaker is not closed; a half-open trial is never hedged.
	ReasonBreaker
	// ReasonErrorRate: the dependency's error rate reached SuppressAt of the breaker's trip point.
	ReasonErrorRate
	// ReasonCold: the latency estimator has fewer than MinimumSamples samples; reported once
	// the call has run MinimumDelay.
	ReasonCold
	// ReasonBacklog: the dependency is slow as a whole (Config.BacklogRatio): the recent
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
	numReasons
)

var reasonNames = [...]string{
	ReasonNone:          "none",
	ReasonNotRepeatable: "not repeatable",
	ReasonBreaker:       "breaker",
	ReasonErrorRate:     "error rate",
	ReasonCold:          "cold",
	ReasonBacklog:       "backlog",
	ReasonBudget:        "budget",
	ReasonSheddable:     "sheddable",
	ReasonWinRate:       "win rate",
	ReasonOverload:      "overload",
	ReasonLimit:         "limit",
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
