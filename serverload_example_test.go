package hedge_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
)

// A transport hands the policy each server's load report as responses arrive (hedgehttp and
// hedgegrpc do it themselves); the backlog gate then decides from the shortest fresh queue.
// A report older than LoadMaxAge counts for nothing.
func ExamplePolicy_ReportLoad() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p.ReportLoad(now, 0, hedge.Load{Queued: 9, Busy: 16, Workers: 16})
	p.ReportLoad(now, 1, hedge.Load{Queued: 1, Busy: 16, Workers: 16})

	q, w, ok := p.ServerQueue(now.Add(10 * time.Millisecond))
	fmt.Println(q, w, ok)
	_, _, ok = p.ServerQueue(now.Add(hedge.LoadMaxAge))
	fmt.Println(ok)
	// Output:
	// 1 16 true
	// false
}
