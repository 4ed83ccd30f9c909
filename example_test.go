package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// Build one policy per dependency, once, and share it: its value is in what it learns
// from every call.
var userService = hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})

func ExampleDo() {
	name, err := hedge.Do(context.Background(), userService, func(ctx context.Context) (string, error) {
		// Call the dependency with ctx: it is cancelled when another attempt wins.
		return "ada", nil
	})
	fmt.Println(name, err)
	// Output: ada <nil>
}

// A call slower than the threshold gets a hedge; the first success wins and the slow
// attempt is cancelled through its context.
func ExampleAfter() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(5 * time.Millisecond)})
	var lg hedge.Log
	v, err := hedge.Do(hedge.WithLog(context.Background(), &lg), p, func(ctx context.Context) (string, error) {
		if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
			return "from the hedge", nil
		}
		<-ctx.Done() // the first attempt is stuck until it loses
		return "", ctx.Err()
	})
	fmt.Println(v, err)
	fmt.Println(len(lg.Attempts), "attempts; first to end:", lg.Attempts[0].Result, "hedge:", lg.Attempts[0].Hedge)
	// Output:
	// from the hedge <nil>
	// 2 attempts; first to end: OK hedge: true
}

// DoInline runs the first attempt on the calling goroutine; a hedge still starts on a
// goroutine of its own while the first attempt waits, which it must do on its context.
func ExampleDoInline() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(5 * time.Millisecond)})
	v, err := hedge.DoInline(context.Background(), p, func(ctx context.Context) (string, error) {
		if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
			return "from the hedge", nil
		}
		<-ctx.Done() // honours its context: DoInline returns once this attempt does
		return "", ctx.Err()
	})
	fmt.Println(v, err)
	// Output: from the hedge <nil>
}

// DoDetached (and DoInlineDetached) return the winner's answer with its context still live,
// for an answer that is read later on it, such as an HTTP response body: the Hold keeps it
// so until Release, which the caller calls once done with the answer.
func ExampleDoDetached() {
	var kept context.Context
	v, hold, err := hedge.DoDetached(context.Background(), userService, func(ctx context.Context) (string, error) {
		kept = ctx // say, a stream read after the call returns
		return "ada", nil
	}, nil)
	fmt.Println(v, err, kept.Err())
	hold.Release()
	fmt.Println(kept.Err())
	// Output:
	// ada <nil> <nil>
	// context canceled
}

// DoInlineDetached is DoInline whose winner's context stays live until the Hold is released,
// for an answer read after the call returns (a response body). discard, when not nil,
// receives every answer that will not be returned, such as a loser's, to close it.
func ExampleDoInlineDetached() {
	var kept context.Context
	v, hold, err := hedge.DoInlineDetached(context.Background(), userService, func(ctx context.Context) (string, error) {
		kept = ctx // runs on the calling goroutine; say, a body read after the call returns
		return "ada", nil
	}, func(string, error) {})
	fmt.Println(v, err, kept.Err())
	hold.Release()
	fmt.Println(kept.Err())
	// Output:
	// ada <nil> <nil>
	// context canceled
}

// AtQuantile learns the threshold from the calls themselves. It stays silent until it has
// MinimumSamples latencies; Measured shows the live threshold without waiting for a hedge.
func ExampleAtQuantile() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.9, hedge.Adaptive{MinimumSamples: 10, MinimumDelay: time.Millisecond})})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	for i := range 10 { // ten calls of 2ms..11ms, driven on explicit time
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		now = now.Add(time.Duration(i+2) * time.Millisecond)
		c.AttemptDone(now, 0, hedge.Outcome{Class: hedge.Success})
	}
	m := p.MeasuredAt(now)
	fmt.Println("warm:", m.Warm, "threshold about 10ms:", m.Threshold > 9*time.Millisecond && m.Threshold < 11500*time.Microsecond)
	// Output: warm: true threshold about 10ms: true
}

// The budget is shared by hedges and retries: within its window, withdrawals stay under
// Ratio × calls plus a small reserve, so a dependency in trouble never sees hedging multiply
// its load.
func ExampleConfig_budget() {
	p := hedge.MustNew(hedge.Config{
		Trigger: hedge.After(10 * time.Millisecond),
		Budget:  budget.Config{Ratio: 0.05, MinPerSecond: 0.1, Window: 10 * time.Second}, // 5% + 1 per 10s
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hedges := 0
	for range 100 { // 100 slow calls, each wanting a hedge
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		for _, a := range c.TimerFired(now.Add(10 * time.Millisecond)) {
			if a.Kind == hedge.StartAttempt {
				hedges++
			}
		}
		c.AttemptDone(now.Add(50*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(20 * time.Millisecond)
	}
	m := p.MeasuredAt(now)
	fmt.Println("hedges:", hedges, "refused by the budget:", m.Suppressed[hedge.ReasonBudget])
	// Output: hedges: 6 refused by the budget: 94
}

// The observer sees every decision; these are the names to put on a dashboard.
func ExampleConfig_observer() {
	p := hedge.MustNew(hedge.Config{
		Trigger: hedge.After(20 * time.Millisecond),
		Budget:  budget.Config{Off: true},
		Observer: func(e hedge.Event) {
			switch e.Kind {
			case hedge.HedgeStarted:
				fmt.Println(e.Kind, "after", e.Delay)
			case hedge.HedgeWon, hedge.AttemptDiscarded:
				fmt.Println(e.Kind, "attempt", e.Attempt, "ran", e.Duration)
			case hedge.HedgeSuppressed:
				fmt.Println(e.Kind, e.Reason)
			}
		},
	})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(at)
	c.TimerFired(at.Add(20 * time.Millisecond))
	c.AttemptDone(at.Add(23*time.Millisecond), 1, hedge.Outcome{Class: hedge.Success})
	fmt.Println(c.Log())

	post := p.NewCall(hedge.CallOptions{Repeatable: hedge.NotRepeatable})
	post.Start(at)
	post.TimerFired(at.Add(20 * time.Millisecond))
	// Output:
	// HedgeStarted after 20ms
	// HedgeWon attempt 1 ran 3ms
	// AttemptDiscarded attempt 0 ran 23ms
	// 2 attempts over 23ms: hedge OK (3ms), at 20ms, discarded (23ms)
	// HedgeSuppressed not_repeatable
}

func ExamplePolicy_Measured() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	m := p.Measured()
	fmt.Println("warm:", m.Warm, "calls:", m.Calls, "budget:", m.Budget)
	// Output: warm: false calls: 0 budget: 10
}

// When every attempt fails, the error names the most informative failure (a permanent one
// over retriable ones), says what happened to each attempt, and unwraps to them all.
func ExampleAttemptsError() {
	p := hedge.MustNew(hedge.Config{Attempts: 2, Backoff: hedge.Backoff{Initial: time.Millisecond}})
	_, err := hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) {
		if info, _ := hedge.AttemptFrom(ctx); info.Retry {
			return 0, hedge.MarkPermanent(errors.New("not found"))
		}
		return 0, errors.New("connection refused")
	})
	var ae *hedge.AttemptsError
	fmt.Println(errors.As(err, &ae), len(ae.Attempts), ae.Err)
	fmt.Println(err)
	// Output:
	// true 2 not found
	// hedge: all 2 attempts failed: not found; attempt 0: connection refused; attempt 1: not found
}

// StartAware hedges a first attempt only once the server has said it started work on it
// (the attempt function calls StartedService; hedgehttp and hedgegrpc do it for you when the
// server sends its start signal), and only after it has been in service for the threshold: a
// copy of a request still queued would wait behind it.
func ExampleStartAware() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95, hedge.Adaptive{MinimumDelay: time.Millisecond})})
	slow := false
	get := func(ctx context.Context) (string, error) {
		hedge.StartedService(ctx) // the server has started this attempt
		if info, _ := hedge.AttemptFrom(ctx); info.Index == 0 && slow {
			<-ctx.Done() // a straggler: in service, and stuck
			return "", ctx.Err()
		}
		return "answer", nil
	}
	for range 20 { // warm up: the threshold is learnt from the calls themselves
		hedge.Do(context.Background(), p, get)
	}
	slow = true
	var lg hedge.Log
	v, err := hedge.Do(hedge.WithLog(context.Background(), &lg), p, get)
	fmt.Println(v, err, "- hedged:", lg.Attempts[0].Hedge)
	// Output:
	// answer <nil> - hedged: true
}
