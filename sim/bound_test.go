package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// routedP99 runs setup and returns the p99, in ms, of each measured call's first-attempt
// queue wait plus its service time, a straggler's (100 ms or more, the reference mixture's
// slow part) counted as 10 ms: what calls would take if hedges removed every straggler for
// free and nothing else changed. It bounds what hedging can reach on top of the run's
// routing of first attempts. It also returns the run's own p99.
func routedP99(t *testing.T, p Params, setup Setup, load float64, seed uint64) (bound, p99 float64) {
	t.Helper()
	r := newRunner()
	rp, err := p.resolve()
	if err != nil {
		t.Fatal(err)
	}
	var lat []int64
	r.s.onService = func(call, attempt int, wait, svc int64) {
		if attempt != 0 {
			return
		}
		if svc >= int64(100*time.Millisecond) {
			svc = int64(10 * time.Millisecond)
		}
		lat = append(lat, wait+svc)
	}
	pt, err := r.run(t.Context(), rp, setup, load, Ignored, seed)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	return float64(lat[int(0.99*float64(len(lat)))]) / 1e6, pt.P99Ms
}

// Setups that route first attempts as server-assisted's do and never hedge: what the routing
// alone does.
var (
	noHedgeReports    = Setup{Name: "no hedge, reports", ServerLoad: true}
	noHedgeReportsOOB = Setup{Name: "no hedge, reports out of band", ServerLoad: true, LoadInterval: OOBInterval}
)

// TestReportRoutingBound: with four replicas of four workers behind p2c and 32 clients, first
// attempts routed by out-of-band reports wait so much less than p2c's that the bound on the
// p99 (first-attempt wait plus a straggler-free service) falls well below p2c's, and routing
// never hedges or fails a call.
func TestReportRoutingBound(t *testing.T) {
	p := Params{Calls: scaled(50_000), Workers: 4, Replicas: 4, Clients: 32, Balancer: BalancerP2C}
	b0, nh := routedP99(t, p, setupNamed(t, SetupNoHedge), 70, 1)
	b1, _ := routedP99(t, p, noHedgeReports, 70, 1)
	b2, oob := routedP99(t, p, noHedgeReportsOOB, 70, 1)
	t.Logf("70 %%: no hedge p99 %.1f ms; bound p2c %.1f (%.3f×), per-call reports %.1f (%.3f×), out of band %.1f (%.3f×)",
		nh, b0, b0/nh, b1, b1/nh, b2, b2/nh)
	if b2 > 0.75*b0 {
		t.Errorf("out-of-band routing's bound %.1f ms, want well below p2c's %.1f", b2, b0)
	}
	if oob > 1.05*nh+1 {
		t.Errorf("routing alone: p99 %.1f ms against p2c's %.1f", oob, nh)
	}
}

// TestRoutingBoundSweep prints the bound for the models and loads in HEDGE_ROUTING_BOUND
// ("replicas,clients,load;..."), seeds 1-6, for the record; without it, it is skipped.
func TestRoutingBoundSweep(t *testing.T) {
	for _, one := range sweepRuns(t, "HEDGE_ROUTING_BOUND", "the routing bounds") {
		var reps, clients, load int
		if _, err := fmt.Sscanf(one, "%d,%d,%d", &reps, &clients, &load); err != nil {
			t.Fatalf("%q: %v", one, err)
		}
		for seed := uint64(1); seed <= 6; seed++ {
			p := Params{Calls: 100_000, Workers: 16 / reps, Replicas: reps, Clients: clients, Balancer: BalancerP2C}
			b0, nh := routedP99(t, p, Setup{Name: SetupNoHedge, Config: hedge.Config{}}, float64(load), seed)
			b1, _ := routedP99(t, p, noHedgeReports, float64(load), seed)
			b2, _ := routedP99(t, p, noHedgeReportsOOB, float64(load), seed)
			t.Logf("%d×%d, %d clients, %d %%, seed %d: no hedge p99 %.1f; bound p2c %.3f, per-call reports %.3f, out of band %.3f",
				reps, 16/reps, clients, load, seed, nh, b0/nh, b1/nh, b2/nh)
		}
	}
}
