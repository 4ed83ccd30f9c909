package sim

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestLocalSetAvoidsUsed(t *testing.T) {
	for _, kind := range Balancers {
		b := newLocalSet(kind, 4, 7)
		for i := range 200 {
			used := []int{i % 4, (i + 1) % 4, (i + 2) % 4}
			if got := b.pick(time.Time{}, used); got != (i+3)%4 {
				t.Fatalf("%s: picked %d with %v used; want the one left", kind, got, used)
			}
			b.done(time.Time{}, (i+3)%4, true)
		}
		// With every replica used, any will do.
		if got := b.pick(time.Time{}, []int{0, 1, 2, 3}); got < 0 || got > 3 {
			t.Fatalf("%s: picked %d", kind, got)
		}
	}
}

func TestLocalSetBalancers(t *testing.T) {
	// least-outstanding always takes the replica with fewest outstanding.
	b := newLocalSet(BalancerLeastOutstanding, 3, 1)
	b.out = []int64{5, 1, 3}
	if got := b.pick(time.Time{}, nil); got != 1 {
		t.Errorf("least-outstanding picked %d", got)
	}
	// p2c never takes the most loaded of three (it loses every pair it is drawn in).
	b = newLocalSet(BalancerP2C, 3, 1)
	for range 100 {
		b.out = []int64{9, 0, 0}
		if got := b.pick(time.Time{}, nil); got == 0 {
			t.Fatal("p2c picked the most loaded replica")
		}
	}
	// round-robin goes round; random spreads.
	b = newLocalSet(BalancerRoundRobin, 3, 1)
	var seq []int
	for range 6 {
		seq = append(seq, b.pick(time.Time{}, nil))
	}
	if !slices.Equal(seq, []int{1, 2, 0, 1, 2, 0}) {
		t.Errorf("round-robin %v", seq)
	}
	b = newLocalSet(BalancerRandom, 4, 1)
	count := make([]int, 4)
	for range 4000 {
		count[b.pick(time.Time{}, nil)]++
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
