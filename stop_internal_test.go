//go:build !race

package hedge

import (
	"context"
	"testing"
	"time"
)

// TestStaleStopFunctionStopsNothingLater: the stop function AfterFunc hands out is the attempt
// state's own (see attemptState.stop), and the state serves call after call. One still out when
// its call ends (its registration ran, or the child context holding it was cancelled by its
// own cancel function, which calls stop afterwards) may yet be called, once, as the context
// package calls it, during a later call that has its own registration: it must stop nothing
// of that call's. (Not under -race, whose sync.Pool drops what it pools, so that no state is
// reused.)
func TestStaleStopFunctionStopsNothingLater(t *testing.T) {
	p := MustNew(Config{Trigger: After(time.Hour)})
	type afterFuncer interface{ AfterFunc(func()) func() bool }
	var (
		state *attemptState
		stale func() bool
	)
	DoInline(context.Background(), p, func(context.Context) (int, error) { return 0, nil }) // fill the pool
	for i := range 20 {
		_, err := DoInline(context.Background(), p, func(ctx context.Context) (int, error) {
			a := ctx.(*attemptCtx)
			stop := ctx.(afterFuncer).AfterFunc(func() {})
			if i%2 == 1 {
				if a.s != state {
					t.Fatalf("call %d: the attempt state of the call before was not reused", i)
				}
				if stale() {
					t.Fatalf("call %d: a stop function of the call before stopped a registration", i)
				}
				if !stop() {
					t.Fatalf("call %d: the call's own registration was stopped by a stop function of the call before", i)
				}
				return 1, nil
			}
			// Left out: the call ends with it uncalled, and it is called during the next.
			state, stale = a.s, stop
			return 1, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
