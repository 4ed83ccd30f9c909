package hedge

import (
	"context"
	"log/slog"
)

// SlogObserver returns a Config.Observer that writes every event to l (nil means
// [slog.Default]) as one record whose message is the event kind ("HedgeStarted", …) and whose
// attributes are the fields that kind sets (see [Event.LogValue]).
//
// Levels follow what a person reading the log needs: attempts starting and succeeding and
// calls succeeding are Debug (one per call or more: too many for Info); hedges, discards,
// suppressions, retries, failed attempts and limit changes are Info; failed calls and breaker
// changes are Warn. A level the logger does not enable costs one Enabled call.
//
// To log with a name (a host, a method), give the observer a logger that carries it:
// SlogObserver(slog.Default().With("dependency", "users")).
func SlogObserver(l *slog.Logger) func(Event) {
	if l == nil {
		l = slog.Default()
	}
	return func(e Event) {
		level := eventLevel(e)
		ctx := context.Background()
		if !l.Enabled(ctx, level) {
			return
		}
		var buf [8]slog.Attr
		l.LogAttrs(ctx, level, e.Kind.String(), e.appendAttrs(buf[:0])...)
	}
}

func eventLevel(e Event) slog.Level {
	switch e.Kind {
	case AttemptStarted:
		return slog.LevelDebug
	case AttemptFinished, CallFinished:
		if e.Err == nil {
			return slog.LevelDebug
		}
		if e.Kind == CallFinished {
			return slog.LevelWarn
		}
		return slog.LevelInfo
	case BreakerChanged:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// LogValue makes an Event a [slog.LogValuer]: a group of the fields its kind sets, for
// example kind=HedgeSuppressed attempt=1 delay=21ms reason="budget".
func (e Event) LogValue() slog.Value {
	var buf [9]slog.Attr
	attrs := append(buf[:0], slog.String("kind", e.Kind.String()))
	return slog.GroupValue(e.appendAttrs(attrs)...)
}

// appendAttrs appends the attributes the event's kind sets (see the EventKind constants).
func (e Event) appendAttrs(a []slog.Attr) []slog.Attr {
	switch e.Kind {
	case LimitChanged:
		return append(a, slog.Int("limit", e.Limit))
	case BreakerChanged:
		return append(a, slog.String("state", e.State))
	}
	a = append(a, slog.Int("attempt", e.Attempt))
	if e.Hedge {
		a = append(a, slog.Bool("hedge", true))
	}
	if e.Retry {
		a = append(a, slog.Bool("retry", true))
	}
	switch e.Kind {
	case HedgeStarted, RetryScheduled:
		a = append(a, slog.Duration("delay", e.Delay))
	case HedgeSuppressed:
		a = append(a, slog.Duration("delay", e.Delay), slog.String("reason", e.Reason.String()))
	case AttemptFinished, HedgeWon, AttemptDiscarded, CallFinished:
		a = append(a, slog.Duration("duration", e.Duration))
	}
	if e.Err != nil {
		a = append(a, slog.Any("err", e.Err))
	}
	return a
}
