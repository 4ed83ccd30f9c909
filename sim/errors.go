package sim

import "errors"

// ErrInvalidConfig is wrapped by every error [Run], [Sweep], [Scorecard] and [Timelines]
// return for a configuration they refuse before simulating anything (a field out of range, an
// unknown setup or family, a seed or load listed twice, a setup whose hedge.Config is
// invalid), so that a caller can tell a mistake in what it asked for from a run that stopped
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
