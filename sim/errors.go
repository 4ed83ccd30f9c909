package sim

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is wrapped by every error [Run], [Sweep], [Scorecard] and [Timelines]
// return for a configuration they refuse (a field out of range, an unknown setup or family, a
// seed or load listed twice, a setup whose hedge.Config is invalid; all found before
// simulating anything, but for arrivals whose rate changes far too often, found as they run), so that a caller can tell a mistake in what it asked for from a run that stopped
// (ctx's error) with errors.Is. The message is the specific error's, unchanged.
var ErrInvalidConfig = errors.New("sim: invalid configuration")

// configError is a configuration error: its message is err's, and it matches both
// ErrInvalidConfig and err (and whatever err wraps, such as hedge.ErrInvalidConfig).
type configError struct{ err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{ErrInvalidConfig, e.err} }

// invalid marks err as a configuration error; nil stays nil.
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalidConfig) {
		return err
	}
	return &configError{err}
}

// PanicError is a panic raised in one simulated run (a user's service distribution, a
// setup's Observer) carried to the caller of [Run], [Sweep], [Scorecard] or [Timelines]: the
// run's goroutine recovers it, the sweep stops, and the process goes on. Its message is one
// line; the panicking goroutine's stack is in Stack. errors.As finds it; Unwrap returns the
// panic's value when that is an error.
type PanicError struct {
	Run   int    // the run's number in its sweep, from 0
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack, as debug.Stack returns it
}

func (e *PanicError) Error() string { return fmt.Sprintf("sim: run %d panicked: %v", e.Run, e.Value) }

// Unwrap returns the panic's value when it is an error, so that errors.Is sees through it.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
