package hedgegrpc

import (
	"context"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge/replica"
)

// A report with a negative figure does not come from a Queue, whose figures are counts: it is
// another server's, or a broken one's, and says nothing a client can use. Read as 0, its queue
// was the shortest of all, and every copy went to the replica that sent it (a replica whose
// report reads as "idle" is where the replica choice sends hedges), however loaded the
// replica was. It is no report, as one whose figures are not numbers, and as hedgehttp's
// ParseLoad refuses a negative figure.
func TestNegativeORCAFigureIsNoReport(t *testing.T) {
	for _, m := range []map[string]float64{
		{MetricQueued: -1, MetricBusy: 4, MetricWorkers: 4},
		{MetricQueued: 0, MetricBusy: -4, MetricWorkers: 4},
		{MetricQueued: 0, MetricBusy: 4, MetricWorkers: -4},
		{MetricQueued: 0, MetricBusy: 4, MetricWorkers: 4, MetricWaitMs: -2},
	} {
		pool, err := replica.NewPool([]string{"a:1", "b:1", "c:1"}, replica.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		set := pool.Set()
		now := time.Now()
		// Replica 1 reports an honest queue; replica 0 the figures under test.
		noteLoad(context.Background(), set, 1, -1, nil, &v3orcapb.OrcaLoadReport{NamedMetrics: map[string]float64{MetricQueued: 2, MetricBusy: 4, MetricWorkers: 4}})
		noteLoad(context.Background(), set, 0, -1, nil, &v3orcapb.OrcaLoadReport{NamedMetrics: m})
		if l, ok := set.Load(now, 0); ok {
			t.Errorf("report %v: the replica set took it as %+v, want no report", m, l)
		}
		// A copy of a call whose first attempt went to replica 2 goes to the replica with the
		// shortest fresh reported queue: the honest one, not the one whose figure is bogus.
		if i := set.Pick(now, []int{2}); i != 1 {
			t.Errorf("report %v: a copy went to replica %d, want 1 (the only fresh report)", m, i)
		}
	}
}
