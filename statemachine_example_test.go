package hedge_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
)

// NewCall is the state machine under Do, for a driver of its own (a simulator, an event
// loop): tell it what happened, at the time it happened, and do what it answers. Nothing
// here reads a clock, so the same events give the same decisions. The call's attempt log
// says what each attempt did; Do fills one for a caller that asks with WithLog.
func ExamplePolicy_NewCall() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond)})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(acts []hedge.Action) {
		for _, a := range acts {
			switch a.Kind {
			case hedge.StartAttempt:
				fmt.Printf("  start attempt %d (hedge %v)\n", a.Attempt, a.Hedge)
			case hedge.ArmTimer:
				fmt.Printf("  timer at +%v\n", a.At.Sub(t0))
			default:
				fmt.Printf("  %v attempt %d\n", a.Kind, a.Attempt)
			}
		}
	}
	c := p.NewCall(hedge.CallOptions{})
	fmt.Println("start:")
	show(c.Start(t0))
	fmt.Println("timer fired:")
	show(c.TimerFired(t0.Add(20 * time.Millisecond)))
	fmt.Println("attempt 1 answered:")
	show(c.AttemptDone(t0.Add(26*time.Millisecond), 1, hedge.Outcome{}))
	fmt.Println(c.Log())
	// Output:
	// start:
	//   start attempt 0 (hedge false)
	//   timer at +20ms
	// timer fired:
	//   start attempt 1 (hedge true)
	// attempt 1 answered:
	//   cancel attempt 0
	//   finish attempt 1
	// 2 attempts over 26ms: hedge OK (6ms), at 20ms, discarded (26ms)
}
