package sim

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hedgekit/hedge/replica"
)

func mustSet(t *testing.T, kind string, n int) replicaSet {
	t.Helper()
	s, err := newReplicaSet(kind, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplicaSetAvoidsUsed: through the engine's interface, the core's replica choice sends an
// attempt to a replica its call has not used, with every balancer.
func TestReplicaSetAvoidsUsed(t *testing.T) {
	var now time.Time
	for _, kind := range Balancers {
		b := mustSet(t, kind, 4)
		for i := range 200 {
			used := []int{i % 4, (i + 1) % 4, (i + 2) % 4}
			if got := b.pick(now, used); got != (i+3)%4 {
				t.Fatalf("%s: picked %d with %v used; want the one left", kind, got, used)
			}
			b.done(now, (i+3)%4, replica.Success)
		}
		if got := b.pick(now, []int{0, 1, 2, 3}); got < 0 || got > 3 {
			t.Fatalf("%s: picked %d", kind, got)
		}
	}
	if _, err := newReplicaSet("best", 4, 1); err == nil {
		t.Error("an unknown balancer has no error")
	}
}

// TestReplicaSetOutstanding: least-outstanding spreads attempts still outstanding over every
// replica; random spreads evenly.
func TestReplicaSetOutstanding(t *testing.T) {
	var now time.Time
	b := mustSet(t, BalancerLeastOutstanding, 3)
	seen := map[int]bool{}
	for range 3 {
		seen[b.pick(now, nil)] = true
	}
	if len(seen) != 3 {
		t.Errorf("least-outstanding put 3 outstanding attempts on %d replicas", len(seen))
	}
	b = mustSet(t, BalancerRandom, 4)
	count := make([]int, 4)
	for range 4000 {
		i := b.pick(now, nil)
		count[i]++
		b.done(now, i, replica.Ignored)
	}
	for i, c := range count {
		if c < 850 || c > 1150 {
			t.Errorf("random picked replica %d %d times of 4000", i, c)
		}
	}
}

// TestReplicasNoHedge: with 4 replicas of 4 workers and no hedging, every balancer keeps the
// workers busy the load's share of the time, and the outstanding-aware balancers give a lower
// p99 than random.
func TestReplicasNoHedge(t *testing.T) {
	p99 := map[string]float64{}
	for _, b := range Balancers {
		p := mustRun(t, Params{Calls: scaled(40_000), Replicas: 4, Workers: 4, Balancer: b}, SetupNoHedge, 70, Reaches, 1)
		if p.UtilisationPct < 66 || p.UtilisationPct > 74 || p.Replicas != 4 || p.Balancer != b {
			t.Errorf("%s: utilisation %.1f %%, replicas %d, balancer %q", b, p.UtilisationPct, p.Replicas, p.Balancer)
		}
		p99[b] = p.P99Ms
	}
	if p99[BalancerP2C] >= p99[BalancerRandom] || p99[BalancerLeastOutstanding] >= p99[BalancerRandom] {
		t.Errorf("p99 by balancer %v: p2c and least-outstanding should beat random", p99)
	}
}

// TestTieDelayDuplicateWork: tied requests on replicas, cancellation reaching the server. With no
// delay a twin never runs (it is cancelled while queued); with a delay it runs until the
// cancellation arrives, which shows as wasted work bounded by the delay.
func TestTieDelayDuplicateWork(t *testing.T) {
	base := Params{Calls: scaled(40_000), Replicas: 4, Workers: 4}
	p := mustRun(t, base, SetupTiedRequests, 50, Reaches, 1)
	if p.WastedWorkPct != 0 || p.Collapse {
		t.Errorf("tied, no delay: wasted %.2f %%, collapse %v; want none", p.WastedWorkPct, p.Collapse)
	}
	base.TieDelay = time.Millisecond
	p = mustRun(t, base, SetupTiedRequests, 50, Reaches, 1)
	// At most 1 ms of each call's ~14 ms of work can be a twin's.
	if p.WastedWorkPct <= 0 || p.WastedWorkPct > 100.0/14 || p.Collapse {
		t.Errorf("tied, 1 ms delay: wasted %.2f %%, collapse %v", p.WastedWorkPct, p.Collapse)
	}
}

func TestSweepReplicaBaselines(t *testing.T) {
	r, err := Sweep(context.Background(), SweepConfig{
		Calls: scaled(10_000), Seeds: []uint64{1}, Loads: []float64{50}, Modes: []string{Reaches},
		Setups: []string{SetupRecommended}, Replicas: 4, Workers: 4, Balancer: BalancerLeastOutstanding,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, p := range r.Points {
		rows = append(rows, p.Setup+" · "+p.Balancer)
	}
	want := []string{"no hedge · random", "no hedge · p2c", "recommended · least-outstanding"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if r.Model.Replicas != 4 || r.Model.Balancer != BalancerLeastOutstanding || r.Model.Workers != 4 {
		t.Errorf("model %+v", r.Model)
	}
	if _, err := Sweep(context.Background(), SweepConfig{Replicas: 4, Balancers: []string{"best"}}, nil); err == nil {
		t.Error("an unknown balancer has no error")
	}
}

// TestReplicaFailures: a refusing replica costs no call (each refused attempt is resent at once
// to another replica); a black-holed one fails calls until outlier detection ejects it, far
// fewer than the share of calls it would otherwise swallow for 10 s.
func TestReplicaFailures(t *testing.T) {
	calls := scaled(60_000)
	ref, _ := FamilyByName(FamilyReplicaRefusing)
	p := mustRun(t, Params{Calls: calls}.withModel(ref.Params), SetupNoHedge, 50, Reaches, 1)
	if p.FailedPct != 0 || p.Collapse || p.RequestsPerCall != 1 {
		t.Errorf("refusing: failed %v %%, collapse %v, requests per call %v", p.FailedPct, p.Collapse, p.RequestsPerCall)
	}
	bh, _ := FamilyByName(FamilyReplicaBlackhole)
	p = mustRun(t, Params{Calls: calls}.withModel(bh.Params), SetupNoHedge, 50, Reaches, 1)
	// 10 s of a quarter of ~570 calls/s is ~1400 calls: 2.6 % of 54,000 measured ones.
	if p.FailedPct <= 0 || p.FailedPct > 0.5 || p.RejectedPct != 0 {
		t.Errorf("blackhole: failed %v %%, rejected %v %%; want a few timeouts, ejection for the rest", p.FailedPct, p.RejectedPct)
	}
	// Without a deadline nothing ends a swallowed call: the run cannot finish its measured calls
	// and stops as a collapse, in bounded work.
	noDeadline := bh.Params
	noDeadline.Timeout = 0
	p = mustRun(t, Params{Calls: scaled(20_000), MaxEvents: 2_000_000}.withModel(noDeadline), SetupNoHedge, 50, Reaches, 1)
	if !p.Collapse {
		t.Error("calls swallowed with no deadline: the run did not stop")
	}
	for _, f := range []Failure{
		{Replica: 4, Kind: FailRefuse},
		{Replica: 0, Kind: "explode"},
		{Replica: 0, Kind: FailRefuse, FlapEvery: time.Second},
		{Replica: 0, Kind: FailRefuse, FlapEvery: time.Second, FlapFor: 2 * time.Second},
	} {
		if _, err := Run(Params{Replicas: 4, Failures: []Failure{f}}, setup(t, SetupNoHedge), 50, Reaches, 1); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

func TestFailingAt(t *testing.T) {
	s := &sim{failures: compileFailures([]Failure{
		{Replica: 1, Kind: FailBlackhole, From: 0.5, For: time.Second},
		{Replica: 2, Kind: FailRefuse, FlapEvery: 4 * time.Second, FlapFor: time.Second},
	}, 10e9)}
	sec := int64(time.Second)
	for _, c := range []struct {
		rp   int
		t    int64
		want failKind
	}{
		{1, 4 * sec, failNone}, {1, 5 * sec, failBlackhole}, {1, 6 * sec, failNone},
		{2, 0, failRefuse}, {2, sec, failNone}, {2, 4*sec + sec/2, failRefuse}, {0, 5 * sec, failNone},
	} {
		if got := s.failingAt(c.rp, c.t); got != c.want {
			t.Errorf("failingAt(%d, %v) = %v, want %v", c.rp, time.Duration(c.t), got, c.want)
		}
	}
}

// TestNoAllocationPerCallTied: tied requests on replicas, with cancellations that take 1 ms to
// reach the server, allocate nothing per call either.
func TestNoAllocationPerCallTied(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	f, _ := FamilyByName(FamilyReplicaPause)
	r := newRunner()
	su := setup(t, SetupTiedRequests)
	allocs := func(calls int) uint64 {
		p, err := Params{Calls: calls, TieDelay: time.Millisecond}.withModel(f.Params).resolve()
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := r.run(context.Background(), p, su, 50, Reaches, 1); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	allocs(40_000)
	if small, large := allocs(10_000), allocs(40_000); large > small+50 {
		t.Errorf("%d allocations for 10k calls, %d for 40k", small, large)
	}
}
