package hedge_test

import (
	"math"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestServerLoadGateRefusesAHugeQueueOfUnknownWorkersOn32Bit: a report without workers (its
// server did not say how many it has) leaves the fleet's demand unknown, and then any queue is
// long (queueLong). A queue near the largest an int holds on a 32-bit platform, as
// hedgehttp.ParseLoad and hedgegrpc's loadOf accept there, must stay long: 2 × (queued+1)
// computed in an int of 32 wraps round to a negative number, and the copy went to the replica
// with a backlog of two billion requests. Run it with GOARCH=386 too.
func TestServerLoadGateRefusesAHugeQueueOfUnknownWorkersOn32Bit(t *testing.T) {
	for _, q := range []int{math.MaxInt32 - 1, 1 << 30} {
		var got hedge.Reason
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
			Observer: func(e hedge.Event) {
				if e.Kind == hedge.HedgeSuppressed {
					got = e.Reason
				}
			}})
		c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
		c.Start(ms(0))
		p.ReportLoad(ms(5), 0, hedge.Load{Queued: q}) // no workers said
		if a := actions(c.TimerFired(ms(20))); a != "" || got != hedge.ReasonBacklog {
			t.Errorf("queue %d of unknown workers: at the threshold %q, suppressed %v; want no hedge, suppressed as backlog", q, a, got)
		}
	}
}
