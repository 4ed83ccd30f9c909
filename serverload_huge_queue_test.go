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

// A server of more workers than a report's 16 bits hold is judged by its queue relative to
// its workers, as any other: 40,000 queued at 200,000 workers starts a copy within a fifth of
// a service time, and the hedge goes. With the workers clamped alone to 65,535, the queue read
// as long (two thirds of a request per worker) and the hedge was refused as a backlog.
func TestServerLoadGateOfManyWorkers(t *testing.T) {
	suppressed := 0
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.HedgeSuppressed {
				suppressed++
			}
		}})
	c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	c.Start(ms(0))
	p.ReportLoad(ms(5), 0, hedge.Load{Queued: 40000, Busy: 200000, Workers: 200000})
	if a := actions(c.TimerFired(ms(20))); a != "start 1 hedge" || suppressed != 0 {
		t.Errorf("at the threshold %q, %d suppressed; want a hedge", a, suppressed)
	}
	if q, w, ok := p.ServerQueue(ms(6)); !ok || q != 13107 || w != 65535 {
		t.Errorf("ServerQueue = %d, %d, %v; want 13107 of 65535 (the report scaled down)", q, w, ok)
	}
}
