package hedgetest

import (
	"context"
	"time"

	"github.com/hedgekit/hedge"
)

// Answer is what one scripted attempt does: wait After, then return Value and Err. An attempt
// whose context ends first returns the context's error at once, as a well-behaved dependency
// call does.
type Answer[T any] struct {
	After time.Duration
	Value T
	Err   error
	// Stuck makes the attempt never answer on its own: it waits for its context.
	Stuck bool
	// Starts makes the attempt report, StartAfter after it began, that its server started
	// work on it ([hedge.StartedService]), as a transport does when the server says so. A
	// StartAfter beyond After is never reached: the attempt has answered by then.
	Starts     bool
	StartAfter time.Duration
}

// Script returns an attempt function for [hedge.Do] that plays answers[k] as attempt k (by
// [hedge.AttemptFrom]); attempts beyond the script are stuck. Inside a testing/synctest
// bubble its waits take no real time, so a test can check exactly when a call was answered
// and by which attempt:
//
//	synctest.Test(t, func(t *testing.T) {
//		start := time.Now()
//		v, err := hedge.Do(ctx, p, hedgetest.Script(
//			hedgetest.Answer[string]{Stuck: true},                          // the primary hangs
//			hedgetest.Answer[string]{After: time.Millisecond, Value: "ok"}, // the hedge answers
//		))
//		// v == "ok", time.Since(start) == threshold + 1ms
//	})
func Script[T any](answers ...Answer[T]) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		var zero T
		info, _ := hedge.AttemptFrom(ctx)
		a := Answer[T]{Stuck: true}
		if info.Index < len(answers) {
			a = answers[info.Index]
		}
		waited := time.Duration(0)
		if a.Starts && (a.Stuck || a.StartAfter <= a.After) {
			if !Sleep(ctx, a.StartAfter) {
				return zero, ctx.Err()
			}
			waited = a.StartAfter
			hedge.StartedService(ctx)
		}
		if a.Stuck {
			<-ctx.Done()
			return zero, ctx.Err()
		}
		if !Sleep(ctx, a.After-waited) {
			return zero, ctx.Err()
		}
		return a.Value, a.Err
	}
}

// Sleep waits d, and reports false when ctx ended first: what an attempt function of a test
// does to take its time and still honour cancellation (inside a synctest bubble the wait is
// virtual).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
