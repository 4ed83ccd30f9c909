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
		if info.Index >= len(answers) || answers[info.Index].Stuck {
			<-ctx.Done()
			return zero, ctx.Err()
		}
		a := answers[info.Index]
		if a.After > 0 {
			t := time.NewTimer(a.After)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return zero, ctx.Err()
			}
		}
		return a.Value, a.Err
	}
}
