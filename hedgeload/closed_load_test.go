package main

import (
	"math"
	"testing"
)

// A closed loop's twin is offered the rate its callers reached, as a load: closedLoad's
// rounding must keep that rate. It rounded to 0.01 % of the servers' capacity, nothing at the
// loads a few callers put on many workers (the straggler server's no-queue setups): one caller
// answered in 2.15 ms on average reaches 465 calls a second, 0.0227 % of 4,096 workers of a 2 ms
// mean, offered to the twin as 0.02 % (12 % too few calls, and a utilisation 12 % too low,
// outside the ±5 % its check allows), and 0.00036 % of 64 replicas of them as 0, which the
// simulator refuses ("load must be > 0 %"), stopping the run after its real point.
func TestClosedLoadKeepsTheRate(t *testing.T) {
	svc := stragglers()
	for _, tc := range []struct {
		perSecond         float64
		workers, replicas int
	}{
		{465, 4096, 1}, {465, 4096, 64}, {930, 1024, 1}, {10000, 256, 1}, {5000, 16, 4},
	} {
		l := closedLoad(tc.perSecond, tc.workers, tc.replicas, svc)
		got := rate(l, tc.workers, tc.replicas, svc)
		if !(l > 0) || math.Abs(got-tc.perSecond) > 0.005*tc.perSecond {
			t.Errorf("closedLoad(%v/s, %d × %d workers) = %v %%: the twin is offered %.1f calls a second, want %v within 0.5 %%",
				tc.perSecond, tc.replicas, tc.workers, l, got, tc.perSecond)
		}
	}
}
