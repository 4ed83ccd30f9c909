package sim_test

import (
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// A collapsed point's requests per call count the attempts still queued or in service when
// the run stopped (with cancellation ignored, a queued attempt will be served whatever
// happens): counted only as they finished, "hedge, no budget" at 95 % load, which hedges
// every call, read 0.000 requests per call, the opposite of the load that collapsed it.
func TestCollapsedPointCountsUnfinishedAttempts(t *testing.T) {
	var setup sim.Setup
	for _, s := range sim.Setups(0) {
		if s.Name == sim.SetupNoBudget {
			setup = s
		}
	}
	for _, seed := range []uint64{1, 2, 3} {
		pt, err := sim.Run(sim.Params{Calls: 50000}, setup, 95, sim.Ignored, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !pt.Collapse {
			t.Fatalf("seed %d: %q at 95 %% did not collapse; the test needs a collapse", seed, setup.Name)
		}
		if pt.HedgeRate < 0.9 || pt.RequestsPerCall < 1+0.9*pt.HedgeRate || pt.RequestsPerCall > 2 {
			t.Errorf("seed %d: %.3f requests per call with %.1f %% of calls hedged; want 1 + hedge rate or more, at most 2",
				seed, pt.RequestsPerCall, 100*pt.HedgeRate)
		}
	}
}
