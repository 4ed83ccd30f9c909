package hedge_test

import (
	"math"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestServerLoadGateRefusesHugeQueuesOn32Bit: queues as long as an int holds on a 32-bit
// platform (what hedgehttp.ParseLoad and hedgegrpc's loadOf accept there) stay a backlog.
// Run it with GOARCH=386 too.
//   - One replica with a short queue does not pass a hedge while another reports such a queue:
//     the fleet holds far more than twice its workers. Summed in an int, that queue plus its
//     busy workers wrapped round to a negative demand, and the backlog vanished.
//   - A report without workers (its server did not say how many it has) leaves the demand
//     unknown, and then any queue is long (queueLong): 2 × (queued+1) in an int wrapped round
//     to a negative number, and the copy went to a replica with a backlog of two billion.
func TestServerLoadGateRefusesHugeQueuesOn32Bit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reports map[int]hedge.Load
	}{
		{"in the fleet", map[int]hedge.Load{0: {Queued: math.MaxInt32, Busy: 16, Workers: 16}, 3: {Queued: 0, Busy: 2, Workers: 4}}},
		{"of unknown workers, near the largest int", map[int]hedge.Load{0: {Queued: math.MaxInt32 - 1}}},
		{"of unknown workers, 2^30", map[int]hedge.Load{0: {Queued: 1 << 30}}},
	} {
		var got hedge.Reason
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
			Observer: func(e hedge.Event) {
				if e.Kind == hedge.HedgeSuppressed {
					got = e.Reason
				}
			}})
		c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
		c.Start(ms(0))
		for replica, l := range tc.reports {
			p.ReportLoad(ms(5), replica, l)
		}
		if a := actions(c.TimerFired(ms(20))); a != "" || got != hedge.ReasonBacklog {
			t.Errorf("a huge queue %s: at the threshold %q, suppressed %v; want no hedge, suppressed as backlog", tc.name, a, got)
		}
	}
}
