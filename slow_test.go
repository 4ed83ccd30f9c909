package hedge_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
)

// slowCancels returns the attempts of the CancelAttempt actions in as, and which of them the
// state machine marked Slow.
func slowCancels(as []hedge.Action) (cancelled, slow []int) {
	for _, a := range as {
		if a.Kind == hedge.CancelAttempt {
			cancelled = append(cancelled, a.Attempt)
			if a.Slow {
				slow = append(slow, a.Attempt)
			}
		}
	}
	return cancelled, slow
}

// TestCancelSlow: a loser cancelled after it had run the call's threshold, because a copy
// answered, is marked Slow (evidence against its replica); a loser that had run less, and an
// attempt cancelled because the caller gave up, are not.
func TestCancelSlow(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})

	// The hedge wins: the primary had run 25 ms, past the 20 ms threshold.
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.TimerFired(ms(20))
	got, slow := slowCancels(c.AttemptDone(ms(25), 1, hedge.Outcome{Class: hedge.Success}))
	if len(got) != 1 || got[0] != 0 || len(slow) != 1 {
		t.Fatalf("hedge won: cancelled %v, slow %v; want the primary, slow", got, slow)
	}

	// The primary wins: the hedge had run 5 ms.
	c = p.NewCall(hedge.CallOptions{})
	c.Start(ms(100))
	c.TimerFired(ms(120))
	got, slow = slowCancels(c.AttemptDone(ms(125), 0, hedge.Outcome{Class: hedge.Success}))
	if len(got) != 1 || got[0] != 1 || len(slow) != 0 {
		t.Fatalf("primary won: cancelled %v, slow %v; want the hedge, not slow", got, slow)
	}

	// The caller gives up: says nothing about the replicas.
	c = p.NewCall(hedge.CallOptions{})
	c.Start(ms(200))
	c.TimerFired(ms(220))
	got, slow = slowCancels(c.Cancel(ms(300), context.Canceled))
	if len(got) != 2 || len(slow) != 0 {
		t.Fatalf("caller gave up: cancelled %v, slow %v; want both, neither slow", got, slow)
	}
}

// TestLostSlow: through Do, the attempt that lost a race past the threshold sees LostSlow; the
// winner, and an attempt outside Do, do not.
func TestLostSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
		lost := make(chan bool, 2)
		v, err := hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index == 0 {
				<-ctx.Done() // the primary hangs until cancelled
				lost <- hedge.LostSlow(ctx)
				return 0, ctx.Err()
			}
			time.Sleep(5 * time.Millisecond)
			lost <- hedge.LostSlow(ctx)
			return 1, nil
		})
		if err != nil || v != 1 {
			t.Fatalf("Do = %v, %v; want the hedge's answer", v, err)
		}
		a, b := <-lost, <-lost
		if a == b || !(a || b) {
			t.Fatalf("LostSlow of the winner and the loser: %v, %v; want exactly the loser's true", a, b)
		}
		if hedge.LostSlow(context.Background()) {
			t.Fatal("LostSlow outside an attempt")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = hedge.Do(ctx, p, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			if hedge.LostSlow(ctx) {
				return 0, errors.New("LostSlow for a call its caller cancelled")
			}
			return 0, ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v; want context.Canceled", err)
		}
	})
}
