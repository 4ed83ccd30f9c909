package hedgetest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

func ExampleManualClock() {
	var clock hedgetest.ManualClock // starts at 2026-01-01T00:00:00Z
	start := clock.Now()
	fmt.Println(start)

	// Drive code that takes explicit times, e.g. budget.Budget.TryWithdraw(clock.Now()).
	fmt.Println(clock.Advance(40 * time.Millisecond))
	clock.Set(start.Add(time.Minute))
	fmt.Println(clock.Since(start))
	// Output:
	// 2026-01-01 00:00:00 +0000 UTC
	// 2026-01-01 00:00:00.04 +0000 UTC
	// 1m0s
}

func ExampleNewManualClock() {
	clock := hedgetest.NewManualClock(time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC))
	deadline := clock.Now().Add(time.Second)
	for clock.Now().Before(deadline) {
		clock.Advance(300 * time.Millisecond)
	}
	fmt.Println(clock.Now().Format(time.StampMilli))
	// Output:
	// Mar  1 09:00:01.200
}

// Script plays a scenario as Do's attempt function: here the first attempt hangs and the
// hedge answers. In a testing/synctest bubble the waits take no real time.
func ExampleScript() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(5 * time.Millisecond)})
	var lg hedge.Log
	v, err := hedge.Do(hedge.WithLog(context.Background(), &lg), p, hedgetest.Script(
		hedgetest.Answer[string]{Stuck: true},
		hedgetest.Answer[string]{Value: "from the hedge"},
	))
	fmt.Println(v, err, len(lg.Attempts), "attempts")
	// Output: from the hedge <nil> 2 attempts
}
