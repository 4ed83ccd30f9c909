package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// A small real point, in each cancellation mode and protocol: every measured call is counted
// once, hedges reach the server and are counted, losers the server finishes are drained
// before the figures are taken, and the servers and connections close (TestMain checks that
// no goroutine is left). It checks the plumbing, not agreement, so it runs under -race too.
func TestRealPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers: not in -short")
	}
	sets, err := setups([]string{sim.SetupNoBudget}, 20*time.Millisecond, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, proto string
		replicas    int
	}{
		{sim.Ignored, HTTP1, 1}, {sim.Ignored, HTTP2, 1}, {sim.Reaches, HTTP1, 1}, {sim.Reaches, HTTP2, 1},
		{sim.Reaches, HTTP2, 3},
	} {
		mode, proto := tc.mode, tc.proto
		{
			t.Run(fmt.Sprintf("%s %s %d replicas", mode, proto, tc.replicas), func(t *testing.T) {
				pc := pointConfig{
					setup: sets[0], loadPct: 30, mode: mode, protocol: proto, seed: 3,
					workers: 8, replicas: tc.replicas, balancer: sim.BalancerRandom, service: scaleDist(sim.ReferenceMixture(), 0.25),
					calls: 300, warmup: 0.1,
					maxLag: time.Hour, callTimeout: 10 * time.Second, deadline: time.Minute, // plumbing only: a busy machine must not stop it
				}
				pt, diag, err := runReal(context.Background(), pc)
				if err != nil {
					t.Fatal(err)
				}
				if pt.Collapse || pt.FailedPct != 0 || pt.Replicas != tc.replicas || pt.Calls != 300 || diag.Sent < 300 {
					t.Fatalf("point = %+v, generator %+v", pt, diag)
				}
				// After(5ms) with a 2.5ms median: about one call in ten hedges (all of them
				// under the race detector on a busy machine, where everything is slow).
				if pt.HedgeRate < 0.02 {
					t.Errorf("hedge rate %.3f, want about 0.1", pt.HedgeRate)
				}
				// Every measured call reached the server at least once, and its hedges too
				// (most of them when the server finishes losers regardless: a hedge whose
				// primary answers before the hedge is on the wire — over HTTP/1.1, before its
				// connection is dialled — never arrives).
				if pt.RequestsPerCall < 1 || mode == sim.Ignored && pt.RequestsPerCall < 1+0.5*pt.HedgeRate {
					t.Errorf("%.3f requests per call with hedge rate %.3f", pt.RequestsPerCall, pt.HedgeRate)
				}
				if pt.P50Ms <= 2 || pt.P50Ms > pt.P99Ms || pt.P99Ms > pt.P999Ms || pt.UtilisationPct <= 0 {
					t.Errorf("p50 %v p99 %v p99.9 %v ms, utilisation %v %%", pt.P50Ms, pt.P99Ms, pt.P999Ms, pt.UtilisationPct)
				}
				if pt.WastedWorkPct <= 0 {
					t.Errorf("wasted work %v %%: the hedges' losers cost the server nothing", pt.WastedWorkPct)
				}
			})
		}
	}
}
