//go:build !race

package hedge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
)

// TestNoHedgeAllocations: a call whose first attempt answers before its hedge is due
// allocates only what the attempt function may keep after the call: with DoInline, the first
// attempt's context; with Do, the first attempt (its context, its function and its answer,
// which its goroutine holds). The driver, the state machine, the event channel, the timer
// and the first attempt's state are reused from call to call. (Not under -race, whose
// sync.Pool drops what it pools.)
func TestNoHedgeAllocations(t *testing.T) {
	ctx := context.Background()
	answer := func(context.Context) (int, error) { return 1, nil }
	for _, tc := range intDrivers {
		t.Run(tc.name, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
			tc.do(ctx, p, answer) // fill the pool
			if n := testing.AllocsPerRun(200, func() { tc.do(ctx, p, answer) }); n > 1 {
				t.Errorf("%s allocates %v times per call, want at most 1", tc.name, n)
			}
		})
	}
}

// TestDetachedAllocations: a DoInlineDetached call that no hedge races, released before the
// next, allocates its first attempt's context and nothing else: its Hold is a value, and the
// winner's state goes back to the policy once released and serves the next call.
func TestDetachedAllocations(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
	answer := func(context.Context) (int, error) { return 1, nil }
	call := func() {
		_, hold, err := hedge.DoInlineDetached(context.Background(), p, answer, nil)
		if err != nil {
			t.Fatal(err)
		}
		hold.Release()
	}
	call()
	if allocs := testing.AllocsPerRun(1000, call); allocs > 1 {
		t.Errorf("DoInlineDetached, released: %v allocations per call, want ≤ 1", allocs)
	}
}

// TestChildContextAllocations: a child context linked to a DoInline attempt's context and
// cancelled before the call ends (what net/http does with every request's) costs the call the
// attempt's context, its Done channel (the child asks for it), and what the context package
// allocates for the child: the child and its cancel function, as for a child of any context,
// and, for the link, its function and the context that carries the stop function. Nothing
// for that stop function itself: the attempt state's own serves one registration at a time
// (see attemptCtx.AfterFunc).
func TestChildContextAllocations(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
	attempt := func(ctx context.Context) (int, error) {
		_, cancel := context.WithCancel(ctx)
		cancel()
		return 1, nil
	}
	call := func() { hedge.DoInline(context.Background(), p, attempt) }
	call() // fill the pool
	if got := testing.AllocsPerRun(200, call); got > 6 {
		t.Errorf("DoInline with a child context: %v allocations per call, want ≤ 6", got)
	}
}

// TestRefusedCallAllocations: a call the breaker refuses before any attempt allocates
// nothing, with either driver: during an outage every call is refused, and DoInline's driver
// (its state machine, event channel and timer) goes back to the pool as after a call that
// ran, where a refused call once dropped it and the next call built a new one.
func TestRefusedCallAllocations(t *testing.T) {
	ctx := context.Background()
	fail := func(context.Context) (int, error) { return 0, errors.New("down") }
	for _, tc := range intDrivers {
		t.Run(tc.name, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour), Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Hour}})
			tc.do(ctx, p, fail) // opens the breaker
			if _, err := tc.do(ctx, p, fail); !errors.Is(err, hedge.ErrBreakerOpen) {
				t.Fatalf("setup: err %v, want the breaker open", err)
			}
			if n := testing.AllocsPerRun(200, func() { tc.do(ctx, p, fail) }); n > 0 {
				t.Errorf("%s allocates %v times per refused call, want none", tc.name, n)
			}
		})
	}
}
