package limit_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/limit"
)

// Each attempt takes a permit; when none is free it fails at once with
// ErrLimitExceeded instead of queueing. Finished calls feed their RTT, and
// the limit moves with it.
func Example() {
	g, err := limit.New(limit.Config{
		OnLimitChange: func(old, new int, now time.Time) { fmt.Printf("limit %d -> %d\n", old, new) },
	})
	if err != nil {
		panic(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	var permits []limit.Permit
	for {
		p, ok := g.Acquire(start)
		if !ok {
			fmt.Println(limit.ErrLimitExceeded, "at", g.InFlight(), "in flight")
			break
		}
		permits = append(permits, p)
	}
	// Every call returns in 10ms: no queuing, so each sample taken while at
	// least half the limit was in flight grows it by its smoothed queue
	// allowance (0.2*4 = 0.8). The first nine permits were taken with fewer
	// than half in flight and change nothing.
	for i, p := range permits {
		g.Release(start.Add(10*time.Millisecond+time.Duration(i)), p, limit.Success)
	}
	fmt.Println(g.Limit(), g.InFlight())
	// Output:
	// limit: limit exceeded at 20 in flight
	// limit 20 -> 21
	// limit 21 -> 22
	// limit 22 -> 23
	// limit 23 -> 24
	// limit 24 -> 25
	// limit 25 -> 26
	// limit 26 -> 27
	// limit 27 -> 28
	// 28 0
}

// A hedge loser cancelled because another attempt won frees its permit
// without feeding its truncated RTT to the limit.
func ExampleGradient2_Release_ignored() {
	g, _ := limit.New(limit.Config{})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	primary, _ := g.Acquire(start)
	hedge, _ := g.Acquire(start.Add(20 * time.Millisecond))
	g.Release(start.Add(25*time.Millisecond), hedge, limit.Success)
	g.Release(start.Add(25*time.Millisecond), primary, limit.Ignored)
	fmt.Println(g.InFlight(), g.Limit(), g.LongRTT())
	// Output: 0 20 5ms
}
