package hedge

import (
	"errors"
	"time"
)

// Class is what an attempt's result means for the call.
type Class uint8

const (
	// Success: the attempt answered and the answer is returned. The first success wins.
	Success Class = iota
	// Retriable: the attempt failed in a way another attempt may not (a 5xx, a timeout, a
	// transport error). It never wins a race; a sequential retry may follow.
	Retriable
	// Permanent: the dependency answered with a final failure (a 4xx). No new attempt starts
	// (no hedge, no retry), but attempts already running may still answer: a stale replica's
	// fast 404 must not beat a healthy replica's success. Set [Outcome.Commit] to end the call
	// at once instead.
	Permanent
)

func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Retriable:
		return "retriable"
	case Permanent:
		return "permanent"
	}
	return "unknown"
}

// Outcome is the classified result of one attempt: what the per-call state machine needs to
// know, and nothing else, so that the simulator can feed it the same way Do does.
type Outcome struct {
	Class Class
	// Err is the attempt's error, kept for the call's error and its attempt log. A failure
	// with none counts as failed all the same: the drivers give it the error the attempt
	// returned, and [Call.AttemptDone] one saying it had none.
	Err error
	// Overload says the dependency signalled overload: hedging pauses for the policy's
	// cool-down, or RetryAfter when longer.
	Overload bool
	// RetryAfter is how long the dependency asked to be left alone (gRPC's retry pushback,
	// HTTP's Retry-After): the call's next retry waits at least this long after this
	// answer, whichever replica it would go to, as gRFC A6 has it.
	RetryAfter time.Duration
	// Commit, on a Permanent failure, ends the call with it at once, cancelling the other
	// attempts (gRFC A6: a status that is not non-fatal commits the call). Without it a
	// Permanent failure stops new attempts but lets those running answer.
	Commit bool
	// Next, on a Retriable failure, sends the next attempt at once instead of at the hedge
	// delay or after the backoff (gRFC A6's nonFatalStatusCodes); every gate still applies.
	Next bool
	// Unsent says the attempt never reached the dependency: nothing of the request was sent
	// (a connection refused, a DNS failure, a TLS handshake failure, a connection reset before
	// the request was written). Unless it is a Success, the call resends it at once, to
	// another replica where the driver has several, without spending the budget and without
	// counting it against Attempts (even a call that is not repeatable: it has not been sent
	// yet), at most Attempts times per call; its failure never counts against the breaker.
	Unsent bool
	// Ejected says the attempt failed at a replica that outlier detection has ejected: the
	// failure is that replica's, not the dependency's, so it does not count against the
	// breaker. The driver that keeps the replicas' health sets it (see package replica).
	Ejected bool
}

// Classify is the default classifier: nil is a [Success]; an error marked with [MarkUnsent] is
// [Retriable] and Unsent; an error marked with [MarkPermanent] is [Permanent]; an error marked
// with [MarkOverloaded] is [Retriable] with the overload signal; any other error is
// [Retriable].
func Classify(err error) Outcome {
	if err == nil {
		return Outcome{Class: Success}
	}
	var ue unsentError
	if errors.As(err, &ue) {
		return Outcome{Class: Retriable, Err: err, Unsent: true}
	}
	var pe permanentError
	if errors.As(err, &pe) {
		return Outcome{Class: Permanent, Err: err}
	}
	var oe overloadError
	if errors.As(err, &oe) {
		return Outcome{Class: Retriable, Err: err, Overload: true, RetryAfter: oe.retryAfter}
	}
	return Outcome{Class: Retriable, Err: err}
}

// errNoAttemptError is the error of a failed attempt whose Outcome carried none.
var errNoAttemptError = errors.New("hedge: the attempt failed without an error")
