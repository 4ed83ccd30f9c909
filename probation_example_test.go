package hedge_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// A transport that keeps its replicas' health reads LostSlow once an attempt ends cancelled:
// the primary here hangs (its replica swallows requests), the hedge answers, and the primary,
// cancelled after it had run the 10 ms threshold, reports replica.Slow rather than nothing.
func ExampleLostSlow() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: budget.Config{Off: true}})
	loser := make(chan string, 1)
	v, _ := hedge.Do(context.Background(), p, func(ctx context.Context) (string, error) {
		if info, _ := hedge.AttemptFrom(ctx); info.Index == 0 {
			<-ctx.Done() // swallowed until the hedge wins
			result := "ignored"
			if hedge.LostSlow(ctx) {
				result = "slow"
			}
			loser <- result
			return "", ctx.Err()
		}
		return "answer", nil
	})
	fmt.Println(v)
	fmt.Println("the primary's replica learns:", <-loser)
	// Output:
	// answer
	// the primary's replica learns: slow
}
