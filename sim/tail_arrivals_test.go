package sim_test

import (
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// A short run on many workers is no collapse: calls go on arriving while its last measured
// calls finish, and on 1,024 workers one straggler lets thousands more arrive. A bound of
// 1,000 arrivals past twice the calls read "no hedge" at 30 % load (a queue that never formed)
// as a collapse; the bound now grows with the workers.
func TestShortRunOnManyWorkersDoesNotCollapse(t *testing.T) {
	for _, c := range []struct{ workers, replicas, calls int }{
		{1024, 0, 2000},
		{256, 16, 4000},
	} {
		p := sim.Params{Workers: c.workers, Replicas: c.replicas, Calls: c.calls}
		for _, seed := range []uint64{1, 2, 3} {
			pt, err := sim.Run(p, sim.Setups(0)[0], 30, sim.Ignored, seed)
			if err != nil {
				t.Fatal(err)
			}
			if pt.Collapse || pt.P99Ms <= 0 {
				t.Errorf("%d×%d workers, %d calls, seed %d: collapse %v, p99 %.1f ms; want a p99 and no collapse",
					max(c.replicas, 1), c.workers, c.calls, seed, pt.Collapse, pt.P99Ms)
			}
		}
	}
}
