package hedge_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
)

// Log.Duration runs "from the start of the call to its end": for a call cancelled while it
// waits out its retry's backoff, to the cancellation, as CallFinished says, not to the failed
// attempt's answer.
func TestLogDurationOfACallCancelledInBackoff(t *testing.T) {
	var finished time.Duration
	p := hedge.MustNew(hedge.Config{
		Attempts: 2, Budget: noBudget,
		Backoff: hedge.Backoff{Initial: 100 * time.Millisecond, Jitter: hedge.Off},
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.CallFinished {
				finished = e.Duration
			}
		},
	})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(t0)
	c.AttemptDone(ms(5), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("boom")})
	c.Cancel(ms(50), context.Canceled)
	if !c.Done() {
		t.Fatal("not done")
	}
	l := c.Log()
	if l.Duration != 50*time.Millisecond || finished != 50*time.Millisecond {
		t.Errorf("Log.Duration = %v, CallFinished.Duration = %v; the call ran 50ms (%v)", l.Duration, finished, l)
	}
}

// DoDetached: when discard panics on a loser's answer that was on its way as the call was
// decided, DoDetached panics with a *PanicError and hands out no Hold. The winning attempt's
// context is cancelled all the same: muted for a Hold that never comes, nothing would ever
// end it (its Done never closed, its AfterFunc callbacks, net/http's among them, never ran).
func TestDetachedDiscardPanicCancelsTheWinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a0 := make(chan struct{})
		var winnerCtx context.Context
		p := hedge.MustNew(hedge.Config{
			Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
			Observer: func(e hedge.Event) {
				if e.Kind == hedge.AttemptFinished && e.Attempt == 1 && e.Err == nil {
					close(a0)                    // let the first attempt answer too
					time.Sleep(time.Millisecond) // it has, before the driver cancels it
				}
			},
		})
		fn := func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index == 0 {
				<-a0
				return 0, nil
			}
			winnerCtx = ctx
			return 1, nil
		}
		var pe *hedge.PanicError
		func() {
			defer func() {
				if x := recover(); x != nil {
					pe, _ = x.(*hedge.PanicError)
				}
			}()
			_, h, err := hedge.DoDetached(t.Context(), p, fn, func(int, error) { panic("discard boom") })
			h.Release()
			t.Logf("DoDetached returned err=%v", err)
		}()
		if pe == nil || pe.Where != "discard" {
			t.Fatalf("setup: DoDetached did not panic in discard (panic %v)", pe)
		}
		if winnerCtx == nil {
			t.Fatal("the hedge never ran")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if err := winnerCtx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("after DoDetached panicked (no Hold handed out), the winner's context Err = %v, want context.Canceled", err)
		}
	})
}
