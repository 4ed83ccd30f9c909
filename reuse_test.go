package hedge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// intDrivers are the two drivers, for a call that answers an int: tests that hold for both
// run each.
var intDrivers = []struct {
	name string
	do   func(context.Context, *hedge.Policy, func(context.Context) (int, error)) (int, error)
}{
	{"DoInline", hedge.DoInline[int]},
	{"Do", hedge.Do[int]},
}

// TestKeptContextStaysCancelled: the drivers reuse a call's state for the next call of the
// policy, but an attempt function that keeps its context past the call (a goroutine it
// started, a logger) sees the context it was left with, cancelled, whatever later calls do
// with the state behind it: Err stays context.Canceled, Done stays closed, AttemptFrom still
// names the attempt, AfterFunc runs at once, and LostSlow stays false. Meanwhile the later
// calls' own contexts are live while their attempts run (a start signal sent through a kept
// context, which is dropped, neither blocks nor disturbs them).
func TestKeptContextStaysCancelled(t *testing.T) {
	for _, tc := range intDrivers {
		t.Run(tc.name, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
			var kept []context.Context
			for i := range 50 {
				v, err := tc.do(context.Background(), p, func(ctx context.Context) (int, error) {
					if err := ctx.Err(); err != nil {
						t.Errorf("call %d: attempt's context is %v while it runs", i, err)
					}
					select {
					case <-ctx.Done():
						t.Errorf("call %d: attempt's context is done while it runs", i)
					default:
					}
					for _, k := range kept {
						hedge.StartedService(k) // must reach no call
					}
					kept = append(kept, ctx)
					return i, nil
				})
				if err != nil || v != i {
					t.Fatalf("call %d = %d, %v", i, v, err)
				}
			}
			for i, k := range kept {
				if err := k.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("kept context %d: Err = %v, want context.Canceled", i, err)
				}
				select {
				case <-k.Done():
				default:
					t.Errorf("kept context %d: Done is not closed", i)
				}
				if info, ok := hedge.AttemptFrom(k); !ok || info != (hedge.AttemptInfo{}) {
					t.Errorf("kept context %d: AttemptFrom = %+v, %v; want attempt 0", i, info, ok)
				}
				if hedge.LostSlow(k) {
					t.Errorf("kept context %d: LostSlow", i)
				}
				ran := make(chan struct{})
				context.AfterFunc(k, func() { close(ran) })
				select {
				case <-ran:
				case <-time.After(10 * time.Second):
					t.Fatalf("kept context %d: AfterFunc did not run", i)
				}
			}
		})
	}
}

// TestReleasedWinnerStateIsReused: a DoInlineDetached winner's state, once released, serves a
// later call's first attempt (TestDetachedAllocations counts what that saves), and neither a
// second Release of the first Hold nor the first winner's kept context reaches that later
// call: its context stays live until its own release, the kept one stays cancelled.
func TestReleasedWinnerStateIsReused(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(*testing.T) context.Context
	}{
		{"Background", func(*testing.T) context.Context { return context.Background() }},
		{"cancellable", func(t *testing.T) context.Context { return t.Context() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
			var ctxs []context.Context
			call := func() hedge.Hold {
				_, hold, err := hedge.DoInlineDetached(tc.ctx(t), p, func(ctx context.Context) (int, error) {
					ctxs = append(ctxs, ctx)
					return 1, nil
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return hold
			}
			for range 20 {
				hold := call()
				hold.Release()
				later := call()
				hold.Release() // again, while the state may serve the later call
				k, l := ctxs[len(ctxs)-2], ctxs[len(ctxs)-1]
				if err := l.Err(); err != nil {
					t.Fatalf("the later winner's context is %v before its release", err)
				}
				if !errors.Is(k.Err(), context.Canceled) {
					t.Fatalf("the released winner's kept context: Err = %v, want context.Canceled", k.Err())
				}
				later.Release()
				if !errors.Is(l.Err(), context.Canceled) {
					t.Fatalf("the later winner's context after release: Err = %v", l.Err())
				}
			}
		})
	}
}
