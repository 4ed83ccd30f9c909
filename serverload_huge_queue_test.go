package hedge_test

import (
	"math"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestServerLoadGateCountsAHugeQueueInTheFleetOn32Bit: one replica with a short queue does not pass a
// hedge while another reports a queue as long as an int holds on a 32-bit platform (what
// hedgehttp.ParseLoad and hedgegrpc's loadOf accept there): the fleet holds far more than
// twice its workers. Summed in an int, that queue plus its busy workers wraps round to a
// negative demand on a 32-bit platform and the backlog vanishes. Run it with GOARCH=386 too.
func TestServerLoadGateCountsAHugeQueueInTheFleetOn32Bit(t *testing.T) {
	var got hedge.Reason
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
		Observer: func(e hedge.Event) {
			if e.Kind == hedge.HedgeSuppressed {
				got = e.Reason
			}
		}})
	c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
	c.Start(ms(0))
	p.ReportLoad(ms(5), 0, hedge.Load{Queued: math.MaxInt32, Busy: 16, Workers: 16})
	p.ReportLoad(ms(6), 3, hedge.Load{Queued: 0, Busy: 2, Workers: 4})
	if a := actions(c.TimerFired(ms(20))); a != "" || got != hedge.ReasonBacklog {
		t.Fatalf("at the threshold: %q, suppressed %v; want no hedge, suppressed as backlog", a, got)
	}
}
