package hedge_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
)

// A deadline-aware policy hedges a call by its caller's deadline as well as by its threshold.
// Do and DoInline read the deadline from the context (context.WithTimeout); a driver of Call,
// such as the simulator, passes it in CallOptions. Here attempts take 40ms (their live p95 is
// 42ms) and the threshold is held to 20ms. A call with 100ms to go is hedged at its threshold;
// one with 60ms to go sooner, while a copy can still answer in time; one with 30ms to go not
// at all: when its hedge falls due, no copy answers in the 10ms left.
func ExampleAdaptive_useDeadline() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{
		UseDeadline:      true,
		MaximumDelay:     20 * time.Millisecond,
		MinimumInService: hedge.Off, // hedge on the attempt's age alone: no other calls here to overtake it
	})})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 20 { // 20 calls of 40ms: the policy learns its latency
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		now = now.Add(40 * time.Millisecond)
		c.AttemptDone(now, 0, hedge.Outcome{})
	}
	for _, left := range []time.Duration{100 * time.Millisecond, 60 * time.Millisecond, 30 * time.Millisecond} {
		c := p.NewCall(hedge.CallOptions{Deadline: now.Add(left)})
		var due time.Time
		for _, a := range c.Start(now) {
			if a.Kind == hedge.ArmTimer {
				due = a.At
			}
		}
		hedged := false
		for _, a := range c.TimerFired(due) {
			hedged = hedged || a.Kind == hedge.StartAttempt && a.Hedge
		}
		fmt.Printf("%v to go: due after %v, hedged %v\n", left, due.Sub(now).Round(time.Millisecond), hedged)
		c.Cancel(now.Add(left), nil)
	}
	fmt.Println("suppressed:", p.MeasuredAt(now).Suppressed)
	// Output:
	// 100ms to go: due after 20ms, hedged true
	// 60ms to go: due after 18ms, hedged true
	// 30ms to go: due after 20ms, hedged false
	// suppressed: map[no_time_left:1]
}
