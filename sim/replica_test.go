package sim

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
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
			if got := b.pick(now, used, 0); got != (i+3)%4 {
				t.Fatalf("%s: picked %d with %v used; want the one left", kind, got, used)
			}
			b.done(now, (i+3)%4, replica.Success)
		}
		if got := b.pick(now, []int{0, 1, 2, 3}, 0); got < 0 || got > 3 {
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
		seen[b.pick(now, nil, uint64(len(seen))<<40)] = true
	}
	if len(seen) != 3 {
		t.Errorf("least-outstanding put 3 outstanding attempts on %d replicas", len(seen))
	}
	b = mustSet(t, BalancerRandom, 4)
	count := make([]int, 4)
	for k := range 4000 {
		i := b.pick(now, nil, mix(uint64(k)))
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

// tiedAtOnce is tied requests as they were first built: both copies sent at once, nothing
// hedged once one has started.
var tiedAtOnce = Setup{Name: "tied at once", Config: hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Attempts: 2, Budget: budget.Config{Off: true}}}

// tiesOnly is Tied with its default TieDelay and no hedge of a copy in service (its threshold
// is never reached).
var tiesOnly = Setup{Name: "ties only", Config: hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{MinimumDelay: time.Hour}), Budget: budget.Config{Off: true}}}

// TestTieDelayDuplicateWork: tied requests on replicas at 50 % load, cancellation reaching the
// server. Sent at once, both copies of an unqueued call start together: with no delay for the
// cancellation the twin never runs; with a 1 ms delay it runs until the cancellation arrives.
// Delayed by TieDelay (1 ms), a copy that starts at once is never tied, so the twins' work
// nearly vanishes.
func TestTieDelayDuplicateWork(t *testing.T) {
	f, _ := FamilyByName(FamilyReplicaPause)
	run := func(su Setup, cancelDelay time.Duration) Point {
		t.Helper()
		p, err := Run(Params{Calls: scaled(40_000), TieDelay: cancelDelay}.withModel(f.Params), su, 50, Reaches, 1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Collapse {
			t.Fatalf("%s, cancellation delay %v: collapse", su.Name, cancelDelay)
		}
		return p
	}
	if p := run(tiedAtOnce, 0); p.WastedWorkPct != 0 {
		t.Errorf("tied at once, cancellation at once: wasted %.2f %%; want none", p.WastedWorkPct)
	}
	atOnce := run(tiedAtOnce, time.Millisecond)
	// At most 1 ms of each call's ~14 ms of work can be a twin's.
	if atOnce.WastedWorkPct <= 1 || atOnce.WastedWorkPct > 100.0/14 {
		t.Errorf("tied at once, cancellation in 1 ms: wasted %.2f %%; want 1-7 %%", atOnce.WastedWorkPct)
	}
	delayed := run(tiesOnly, time.Millisecond)
	if delayed.WastedWorkPct > 0.2 || delayed.HedgeRate > 0.1 {
		t.Errorf("ties after 1 ms, cancellation in 1 ms: wasted %.2f %%, %.1f %% of calls tied; want under 0.2 %% and 10 %%",
			delayed.WastedWorkPct, 100*delayed.HedgeRate)
	}
}

// TestTiedRequestsCutTheHiccupTail: the tied requests setup on replicas, one pausing, at 50 %
// load: with cancellation reaching the server its p99 and p99.9 are a fraction of no hedge's
// under the same balancer, with less work done in all; with cancellation ignored it does not
// collapse and its tail is no worse.
func TestTiedRequestsCutTheHiccupTail(t *testing.T) {
	f, _ := FamilyByName(FamilyReplicaPause)
	params := Params{Calls: scaled(100_000), TieDelay: time.Millisecond}.withModel(f.Params)
	run := func(name, mode string) Point {
		t.Helper()
		p, err := Run(params, setup(t, name), 50, mode, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := run(SetupNoHedge, Reaches)
	re := run(SetupTiedRequests, Reaches)
	if re.Collapse || re.P99Ms > base.P99Ms/3 || re.P999Ms > base.P999Ms/3 || re.UtilisationPct >= base.UtilisationPct {
		t.Errorf("reaches: p99 %.1f, p99.9 %.1f ms, utilisation %.1f %%; no hedge %.1f, %.1f ms, %.1f %%",
			re.P99Ms, re.P999Ms, re.UtilisationPct, base.P99Ms, base.P999Ms, base.UtilisationPct)
	}
	ig := run(SetupTiedRequests, Ignored)
	if ig.Collapse || ig.P99Ms > base.P99Ms || ig.P999Ms > 1.05*base.P999Ms {
		t.Errorf("ignored: collapse %v, p99 %.1f, p99.9 %.1f ms; no hedge %.1f, %.1f ms", ig.Collapse, ig.P99Ms, ig.P999Ms, base.P99Ms, base.P999Ms)
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
	s := &sim{model: model{failures: compileFailures([]Failure{
		{Replica: 1, Kind: FailBlackhole, From: 0.5, For: time.Second},
		{Replica: 2, Kind: FailRefuse, FlapEvery: 4 * time.Second, FlapFor: time.Second},
	}, 10e9)}}
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

// TestCommonRandomNumbers: with a random balancer, every call's first attempt goes to the same
// replica with and without hedging, and has the same service time: the hedges draw from
// streams of their own, so a comparison with no hedge compares the same primaries. (Where
// outlier detection has ejected a replica, or one is on trial after an ejection, the choice
// differs, as it should: that is a decision, not the dice.)
func TestCommonRandomNumbers(t *testing.T) {
	p, err := Params{Calls: 20000, Replicas: 8, Workers: 2, Balancer: BalancerRandom, Clients: 4}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	type first struct {
		replica int
		svc     int64
		ejected bool
	}
	firsts := func(setup string) map[int]first {
		m := make(map[int]first)
		r := newRunner()
		r.s.onStart = func(call, attempt, rp int, svc int64, ejected bool) {
			if attempt == 0 && call < p.Calls {
				m[call] = first{rp, svc, ejected}
			}
		}
		pt, err := r.run(t.Context(), p, setupNamed(t, setup), 50, Ignored, 2)
		if err != nil {
			t.Fatal(err)
		}
		if setup != SetupNoHedge && pt.HedgeRate == 0 {
			t.Fatalf("%s sent no hedge: the test compares nothing", setup)
		}
		return m
	}
	base := firsts(SetupNoHedge)
	for _, setup := range []string{SetupRecommended, SetupDefaultBudget} {
		got := firsts(setup)
		if len(got) != len(base) {
			t.Fatalf("%s: %d first attempts, no hedge %d", setup, len(got), len(base))
		}
		same := 0
		for call, want := range base {
			g := got[call]
			if g.svc != want.svc {
				t.Fatalf("%s: call %d's first attempt served %d ns; without hedging %d ns", setup, call, g.svc, want.svc)
			}
			if g.ejected || want.ejected {
				continue
			}
			if g.replica != want.replica {
				t.Fatalf("%s: call %d's first attempt went to replica %d; without hedging to %d", setup, call, g.replica, want.replica)
			}
			same++
		}
		if same < len(base)/2 {
			t.Fatalf("%s: only %d of %d first attempts were picked with every replica in service", setup, same, len(base))
		}
	}
}

func setupNamed(t *testing.T, name string) Setup {
	t.Helper()
	for _, s := range Setups(0) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no setup %q", name)
	return Setup{}
}
