package hedge_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// A retry that could start only after the caller's deadline helps nobody: the call fails at
// once with its attempt's error and spends no budget, instead of withdrawing a token and
// then waiting for the deadline to cancel the retry it paid for.
func TestRetryThatCannotStartBeforeTheDeadlineIsNotMade(t *testing.T) {
	transient := errors.New("transient")
	for _, tc := range []struct {
		name     string
		deadline time.Time
		outcome  hedge.Outcome
		want     string // the actions of the failed attempt's AttemptDone
	}{
		{"backoff past the deadline", ms(15), hedge.Outcome{Class: hedge.Retriable, Err: transient}, "finish -1"},
		{"backoff ends at the deadline", ms(22), hedge.Outcome{Class: hedge.Retriable, Err: transient}, "finish -1"},
		{"pushback past the deadline", ms(100), hedge.Outcome{Class: hedge.Retriable, Err: transient, RetryAfter: 200 * time.Millisecond}, "finish -1"},
		{"backoff within the deadline", ms(23), hedge.Outcome{Class: hedge.Retriable, Err: transient}, "timer 22ms"},
		{"no deadline", time.Time{}, hedge.Outcome{Class: hedge.Retriable, Err: transient}, "timer 22ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: budget.Config{Ratio: budget.Zero, MinPerSecond: 1},
				Backoff: hedge.Backoff{Initial: 20 * time.Millisecond, Jitter: -1}})
			before := p.MeasuredAt(ms(0)).Budget
			c := p.NewCall(hedge.CallOptions{Deadline: tc.deadline})
			c.Start(ms(0))
			if got := actions(c.AttemptDone(ms(2), 0, tc.outcome)); got != tc.want {
				t.Fatalf("after the failure: %q, want %q", got, tc.want)
			}
			after := p.MeasuredAt(ms(2))
			if tc.want != "finish -1" {
				if after.Retries != 1 || after.Budget != before-1 {
					t.Errorf("retry made: Retries %d, budget %v → %v; want 1 retry paid for", after.Retries, before, after.Budget)
				}
				return
			}
			err := c.Err()
			if !errors.Is(err, hedge.ErrNoTimeForRetry) || !errors.Is(err, transient) {
				t.Errorf("err = %v, want the attempt's error with ErrNoTimeForRetry as the cause", err)
			}
			if after.Retries != 0 || after.Budget != before {
				t.Errorf("no retry: Retries %d, budget %v → %v; want none scheduled and nothing spent", after.Retries, before, after.Budget)
			}
		})
	}
}

// Do takes the deadline from the context: a failure whose retry would start after it
// returns at once, not when the context expires.
func TestDoFailsAtOnceWhenTheRetryCannotStartBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget,
			Backoff: hedge.Backoff{Initial: 50 * time.Millisecond, Jitter: -1}})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		transient := errors.New("transient")
		var n atomic.Int32
		start := time.Now()
		_, err := hedge.Do(ctx, p, func(ctx context.Context) (int, error) {
			n.Add(1)
			time.Sleep(5 * time.Millisecond)
			return 0, transient
		})
		if got := time.Since(start); got != 5*time.Millisecond {
			t.Errorf("Do returned after %v, want 5ms: at the failure, not at the 30ms deadline", got)
		}
		if !errors.Is(err, transient) || !errors.Is(err, hedge.ErrNoTimeForRetry) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the attempt's error, ErrNoTimeForRetry as its cause", err)
		}
		if n.Load() != 1 {
			t.Errorf("%d attempts, want 1", n.Load())
		}
	})
}
