package hedge

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/limit"
)

// Sentinel errors. Match them with [errors.Is]; the errors Do returns wrap them with detail.
var (
	// ErrBreakerOpen is returned, without calling the dependency, while the policy's circuit
	// breaker is open (or half-open with its trial calls taken). It wraps [breaker.ErrOpen],
	// so code written against the breaker package alone matches it too.
	ErrBreakerOpen error = &sentinel{"hedge: circuit breaker open", breaker.ErrOpen}
	// ErrLimitExceeded is returned, without calling the dependency, when the adaptive
	// concurrency limit has no free permit for the first attempt. It fails fast, without
	// queueing, so the caller can fall back. It wraps [limit.ErrLimitExceeded]: one
	// condition, matched by either name.
	ErrLimitExceeded error = &sentinel{"hedge: concurrency limit exceeded", limit.ErrLimitExceeded}
	// ErrBudgetExhausted is the reason a failed call was not retried: the retry budget, shared
	// with hedges, had nothing left.
	ErrBudgetExhausted = errors.New("hedge: retry budget exhausted")
	// ErrNoTimeForRetry is the reason a failed call was not retried: its retry, after the
	// backoff (or the server's pushback), could not have started before the call's deadline
	// (CallOptions.Deadline, which Do takes from the context). The call fails at once with its
	// attempts' errors instead of waiting out the deadline, and spends no budget.
	ErrNoTimeForRetry = errors.New("hedge: no time left for a retry before the deadline")
	// ErrUnreachable is the cause of a failed call none of whose attempts reached the
	// dependency (every one was refused, or failed its DNS lookup or TLS handshake, before
	// anything was sent): the *[AttemptsError] that wraps it lists each attempt's error.
	ErrUnreachable = errors.New("hedge: no attempt reached the dependency")
)

// sentinel is a sentinel error of this package that is also one of a sub-package's.
type sentinel struct {
	msg string
	err error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.err }

// AttemptsError reports a call in which no attempt succeeded. Its message names the most
// informative failure and says what happened to each attempt; Unwrap returns every
// attempt's error, so errors.Is and errors.As see them all.
//
// The most informative failure, Err, is a Permanent one when there is one (the dependency's
// own final answer, such as a not-found) rather than a retriable one (a timeout, an
// overloaded replica), and among equals the last to answer. A Permanent failure ends the
// call only once no other attempt is running: a fast final failure from one copy does not
// beat a slower copy that succeeds.
type AttemptsError struct {
	// Attempts holds one error per attempt that failed, in start order (attempts cancelled
	// because the call ended have none).
	Attempts []error
	// Err is the most informative of Attempts (see above); nil only when Attempts is empty.
	Err error
	// Cause, when not nil, is why no further attempt was made (for example
	// [ErrBudgetExhausted]).
	Cause error
}

func (e *AttemptsError) Error() string {
	var b strings.Builder
	n := len(e.Attempts)
	if n == 1 {
		b.WriteString("hedge: 1 attempt failed")
	} else {
		fmt.Fprintf(&b, "hedge: all %d attempts failed", n)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	if n > 1 || e.Err == nil {
		for i, err := range e.Attempts {
			fmt.Fprintf(&b, "; attempt %d: %v", i, err)
		}
	}
	return b.String()
}

// Unwrap returns the attempts' errors and the cause, for errors.Is and errors.As.
func (e *AttemptsError) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts)+1)
	errs = append(errs, e.Attempts...)
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// PanicError carries a panic raised by user code the library called (an attempt's function,
// Config.Observer, Config.Classify) to the caller's goroutine. A panic in a goroutine the
// library started would otherwise kill the process, and one in a callback would leave the
// policy's shared state (limit permits, the breaker's trial ticket, running attempts) half
// updated; instead the call ends, everything it held is given back, and Do panics with a
// *PanicError in the goroutine that called it, where the caller can recover it.
//
// Its message is one line; the panicking goroutine's stack is in Stack.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the stack of the panicking goroutine, as debug.Stack returns it
	// Where names the code that panicked: "attempt", "Observer", "Classify" or "discard"
	// (DoDetached's).
	Where string

	goexit bool // the attempt called runtime.Goexit
}

func newPanicError(where string, v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack(), Where: where}
}

func (e *PanicError) Error() string {
	if e.goexit {
		return "hedge: " + e.Where + " called runtime.Goexit"
	}
	return fmt.Sprintf("hedge: %s panicked: %v", e.Where, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// permanentError marks an error as not worth retrying. See [MarkPermanent].
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// MarkPermanent marks err as a permanent failure: the default classifier neither retries it nor
// lets another attempt race it, because the dependency has answered and the answer is final
// (a validation error, a not-found). MarkPermanent(nil) is nil.
func MarkPermanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// overloadError marks an error as the dependency saying it is overloaded. See [MarkOverloaded].
type overloadError struct {
	err        error
	retryAfter time.Duration
}

func (e overloadError) Error() string { return e.err.Error() }
func (e overloadError) Unwrap() error { return e.err }

// MarkOverloaded marks err as an overload signal from the dependency (an HTTP 429 or a 503 with
// Retry-After, a gRPC RESOURCE_EXHAUSTED, or anything the caller knows means "too busy").
// The default classifier treats it as a retriable failure and pauses hedging for the policy's
// OverloadCooldown, or for retryAfter when that is longer, because a copy sent to a dependency
// that says it is overloaded only deepens the overload. MarkOverloaded(nil, d) is nil.
func MarkOverloaded(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return overloadError{err: err, retryAfter: retryAfter}
}

// unsentError marks an error as an attempt that never reached the dependency. See [MarkUnsent].
type unsentError struct{ err error }

func (e unsentError) Error() string { return e.err.Error() }
func (e unsentError) Unwrap() error { return e.err }

// MarkUnsent marks err as the failure of an attempt that never reached the dependency:
// nothing of the request was sent (a connection refused, a DNS failure, a TLS handshake
// failure). The default classifier sets [Outcome].Unsent for it, so the call resends the
// attempt at once, without spending the budget, and the failure does not count against the
// breaker. MarkUnsent(nil) is nil.
func MarkUnsent(err error) error {
	if err == nil {
		return nil
	}
	return unsentError{err}
}
