package hedge_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
)

// Tied requests, step by step on the state machine every driver runs: the first copy has not
// started within TieDelay, so a tie goes to another replica; the tie starts first, and the
// copy still queued is cancelled, to be dropped by its server without running.
func ExampleTied() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: 2 * time.Millisecond})})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	show := func(event string, acts []hedge.Action) {
		fmt.Print(event, ":")
		for _, a := range acts {
			switch a.Kind {
			case hedge.StartAttempt:
				fmt.Print(" send copy ", a.Attempt)
			case hedge.CancelAttempt:
				fmt.Print(" cancel copy ", a.Attempt)
			case hedge.ArmTimer:
				fmt.Print(" wake at ", a.At.Sub(start))
			case hedge.Finish:
				fmt.Print(" finish with copy ", a.Attempt)
			}
		}
		fmt.Println()
	}
	c := p.NewCall(hedge.CallOptions{})
	show("start", c.Start(at(0)))
	show("2ms, copy 0 still queued", c.TimerFired(at(2)))
	show("3ms, copy 1 started", c.AttemptStartedService(at(3), 1))
	show("9ms, copy 1 answered", c.AttemptDone(at(9), 1, hedge.Outcome{}))
	// Output:
	// start: send copy 0 wake at 2ms
	// 2ms, copy 0 still queued: send copy 1
	// 3ms, copy 1 started: cancel copy 0
	// 9ms, copy 1 answered: finish with copy 1
}
