package sim

import (
	"maps"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// TestServerAssistedUsesReports: the same policy as recommended, with the servers' load
// reports (Setup.ServerLoad), on four replicas of four workers with cancellation reaching the
// server: copies go to the replica that can start them and hedges of stragglers are no longer
// held back for want of in-service evidence, so the reports change what the policy does; the
// tail is a fifth of no hedge's and no longer than recommended's (which reaches about the
// same here from its own evidence), on the same calls. Without reports the two setups are the
// same policy.
func TestServerAssistedUsesReports(t *testing.T) {
	p := Params{Calls: 30_000, Workers: 4, Replicas: 4, Balancer: BalancerP2C, Clients: 32}
	nh := mustRun(t, p, SetupNoHedge, 50, Reaches, 1)
	rec := mustRun(t, p, SetupRecommended, 50, Reaches, 1)
	sa := mustRun(t, p, SetupServerAssisted, 50, Reaches, 1)
	t.Logf("p99: no hedge %.1f, recommended %.1f, server-assisted %.1f ms", nh.P99Ms, rec.P99Ms, sa.P99Ms)
	if !(sa.P99Ms <= 0.2*nh.P99Ms && sa.P99Ms <= rec.P99Ms) {
		t.Fatalf("server-assisted p99 %.1f ms, want at most 0.2 × no hedge's %.1f and no more than recommended's %.1f", sa.P99Ms, nh.P99Ms, rec.P99Ms)
	}
	if sa.HedgeRate == rec.HedgeRate && sa.P99Ms == rec.P99Ms {
		t.Fatalf("server-assisted made the same decisions as recommended (hedge rate %v): the reports were not used", sa.HedgeRate)
	}
	if sa.FailedPct > nh.FailedPct {
		t.Fatalf("server-assisted failed %.2f %% of calls, no hedge %.2f %%", sa.FailedPct, nh.FailedPct)
	}

	off := setup(t, SetupServerAssisted)
	off.ServerLoad = false
	off.Name = "server-assisted, no reports"
	pt, err := Run(p, off, 50, Reaches, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.P99Ms != rec.P99Ms || pt.HedgeRate != rec.HedgeRate {
		t.Fatalf("without reports: p99 %v, hedge rate %v; recommended %v, %v", pt.P99Ms, pt.HedgeRate, rec.P99Ms, rec.HedgeRate)
	}
}

// TestServerAssistedOneQueue: with one shared queue the reports hold hedges back while the
// queue is long, so at high load server-assisted sends fewer hedges than at low load.
func TestServerAssistedOneQueue(t *testing.T) {
	p := Params{Calls: 20_000}
	low := mustRun(t, p, SetupServerAssisted, 30, Ignored, 1)
	high := mustRun(t, p, SetupServerAssisted, 95, Ignored, 1)
	nh := mustRun(t, p, SetupNoHedge, 30, Ignored, 1)
	if low.P99Ms > 0.25*nh.P99Ms {
		t.Fatalf("30 %%: p99 %.1f ms, want at most a quarter of no hedge's %.1f", low.P99Ms, nh.P99Ms)
	}
	if high.Suppressed["backlog"] == 0 || high.HedgeRate >= low.HedgeRate {
		t.Fatalf("95 %%: hedge rate %.3f (30 %%: %.3f), backlog suppressions %d; want the reports to hold hedges back",
			high.HedgeRate, low.HedgeRate, high.Suppressed["backlog"])
	}
}

// oobRecorder is a client that records the out-of-band reports it receives, by replica.
type oobRecorder struct {
	plainClient
	got map[int]int
}

func (r *oobRecorder) load(s *sim, c int32, rp int, l hedge.Load) { r.got[rp]++ }

// TestOOBSilentReplicas: a replica that swallows requests or refuses connections, or is in a
// pause, sends no out-of-band report; the others do, with their queue and busy workers.
func TestOOBSilentReplicas(t *testing.T) {
	s := newSim()
	rec := &oobRecorder{got: map[int]int{}}
	s.reset(runParams{workers: 2, replicas: 4, clients: 1, calls: 1, lambda: 1, seed: 1,
		dist: Exponential{MeanTime: time.Millisecond}, maxQueue: 10, maxEvents: 10,
		reports: true, reportEvery: int64(10 * time.Millisecond),
		failures: []failureWindow{{replica: 1, kind: failBlackhole, to: 1 << 62}, {replica: 2, kind: failRefuse, to: 1 << 62}},
	}, rec)
	s.choose = []chooser{nopChooser{}}
	s.pauseEvery, s.pauseLen = int64(time.Second), int64(time.Second/2)
	s.pausePhase = []int64{-1, -1, -1, 0} // replica 3 pauses for the first half of each second
	s.reportOOB(0)
	if want := map[int]int{0: 1}; !maps.Equal(rec.got, want) {
		t.Fatalf("reports by replica %v, want %v (only the healthy, unpaused one)", rec.got, want)
	}
	s.now = int64(time.Second * 3 / 4)
	s.reportOOB(0)
	if want := map[int]int{0: 2, 3: 1}; !maps.Equal(rec.got, want) {
		t.Fatalf("after the pause, reports by replica %v, want %v", rec.got, want)
	}
}

type nopChooser struct{}

func (nopChooser) pick(time.Time, []int, uint64) int   { return 0 }
func (nopChooser) done(time.Time, int, replica.Result) {}
func (nopChooser) load(time.Time, int, replica.Load)   {}
