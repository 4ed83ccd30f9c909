package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

func TestFamilyNamesStable(t *testing.T) {
	want := []string{"reference", "heavier-stragglers", "frequent-stragglers", "no-stragglers", "bimodal",
		"heavy-tailed", "few-workers", "many-workers", "several-clients", "bursty", "brownout", "load-step"}
	got := FamilyNames()
	for i, n := range want {
		if i >= len(got) || got[i] != n {
			t.Fatalf("families = %v; the first ones must stay %v", got, want)
		}
	}
	if _, err := FamilyByName("cloudy"); err == nil {
		t.Error("an unknown family has no error")
	}
}

// TestReferenceFamilyIsReference: the reference family is the reference model, figure for figure.
func TestReferenceFamilyIsReference(t *testing.T) {
	f, _ := FamilyByName(FamilyReference)
	calls := scaled(20_000)
	a := mustRun(t, Params{Calls: calls}, SetupRecommended, 70, Ignored, 1)
	b := mustRun(t, Params{Calls: calls}.withModel(f.Params), SetupRecommended, 70, Ignored, 1)
	if !equalPoints(a, b) {
		t.Errorf("reference %+v\nfamily %+v", a, b)
	}
}

// TestFamiliesRun: every family runs, and with no hedging the workers are busy about the load's
// share of the time (the arrival shapes keep the mean rate; a brownout adds work; a load step
// spends part of the run at half the load).
func TestFamiliesRun(t *testing.T) {
	for _, f := range Families() {
		p := mustRun(t, Params{Calls: scaled(40_000)}.withModel(f.Params), SetupNoHedge, 50, Ignored, 1)
		lo, hi := 45.0, 55.0
		switch f.Name {
		case FamilyLoadStep:
			lo, hi = 35, 49
		case FamilyBrownout:
			hi = 58
		case FamilyReplicaSlow, FamilyReplicaDegrading: // the slow replica's work takes longer
			hi = 72
		case FamilyHeavyTailed:
			lo, hi = 40, 60
		}
		if p.Collapse || p.UtilisationPct < lo || p.UtilisationPct > hi {
			t.Errorf("%s: utilisation %.1f %% (collapse %v), want %v–%v", f.Name, p.UtilisationPct, p.Collapse, lo, hi)
		}
	}
}

func TestParetoMean(t *testing.T) {
	d := Pareto{Min: 5 * time.Millisecond, Alpha: 1.5, Max: 10 * time.Second}
	r := rand.New(rand.NewPCG(1, 2))
	var sum float64
	n := 400_000
	for range n {
		sum += float64(d.Sample(r))
	}
	got, want := sum/float64(n), float64(d.Mean())
	if math.Abs(got-want)/want > 0.03 {
		t.Errorf("sample mean %v, Mean() %v", time.Duration(got), d.Mean())
	}
	// Hand-computed: 5 + 5^1.5 (10000^-0.5 - 5^-0.5) / -0.5 ms = 15 - 0.2236 ms.
	if m := d.Mean(); math.Abs(float64(m)/1e6-14.7764) > 0.001 {
		t.Errorf("Mean() = %v, want 14.776 ms", m)
	}
	if err := validateDistribution(d); err != nil {
		t.Error(err)
	}
}

func TestArrivalsMultiplier(t *testing.T) {
	ms := int64(time.Millisecond)
	m := Arrivals{BurstEvery: time.Second, BurstFor: 200 * time.Millisecond, BurstRate: 3}.multiplier(1e12)
	for _, c := range []struct {
		t     int64
		m     float64
		until int64
	}{
		{0, 3, 200 * ms},
		{199 * ms, 3, 200 * ms},
		{200 * ms, 0.5, 1000 * ms},
		{1100 * ms, 3, 1200 * ms},
	} {
		if got, until := m(c.t); got != c.m || until != c.until {
			t.Errorf("burst multiplier at %v = %v until %v; want %v until %v", c.t, got, until, c.m, c.until)
		}
	}
	step := Arrivals{StepAt: 0.3, StepFrom: 0.5}.multiplier(1000 * float64(ms))
	if got, until := step(100 * ms); got != 0.5 || until != 300*ms {
		t.Errorf("step before: %v until %v", got, until)
	}
	if got, until := step(300 * ms); got != 1 || until != 0 {
		t.Errorf("step after: %v until %v", got, until)
	}
	if (Arrivals{}).multiplier(1) != nil {
		t.Error("constant arrivals have a multiplier")
	}
	if err := (Arrivals{BurstEvery: time.Second, BurstFor: 500 * time.Millisecond, BurstRate: 3}).check(); err == nil {
		t.Error("a burst of more than the mean accepted")
	}
}

// TestUnpaused: a replica pausing 100 ms every 2 s from phase 500 ms.
func TestUnpaused(t *testing.T) {
	ms := int64(time.Millisecond)
	s := &sim{model: model{pauseEvery: 2000 * ms, pauseLen: 100 * ms}, servers: servers{pausePhase: []int64{500 * ms, -1}}}
	for _, c := range []struct {
		start, svc, end int64
	}{
		{0, 10 * ms, 10 * ms},            // before the first pause
		{490 * ms, 20 * ms, 610 * ms},    // 10 ms, the pause, 10 ms
		{550 * ms, 10 * ms, 610 * ms},    // starts in the pause
		{600 * ms, 10 * ms, 610 * ms},    // just after
		{2400 * ms, 200 * ms, 2700 * ms}, // across the second pause (2500–2600)
		{0, 4100 * ms, 4300 * ms},        // 500 + 1900 + 1700 ms of work around two pauses
		{450 * ms, 4100 * ms, 4850 * ms}, // 50 + 1900 + 1900 + 250 ms around three
	} {
		if got := s.unpaused(0, c.start, c.svc); got != c.end {
			t.Errorf("unpaused(%v, %v) = %v, want %v", time.Duration(c.start), time.Duration(c.svc), time.Duration(got), time.Duration(c.end))
		}
	}
	if got := s.unpaused(1, 550*ms, 10*ms); got != 560*ms {
		t.Errorf("a replica that does not pause: %v", time.Duration(got))
	}
}

// TestNoAllocationPerCallFamilies: the engine's extensions (clients, bursts, slowdowns) allocate
// nothing per call either.
func TestNoAllocationPerCallFamilies(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, name := range []string{FamilySeveralClients, FamilyBursty, FamilyBrownout, FamilyLoadStep, FamilyHeavyTailed, FamilyReplicaPausesAll, FamilyReplicaDegrading, FamilyReplicaBlackhole, FamilyReplicaFlapping} {
		f, _ := FamilyByName(name)
		r := newRunner()
		su := setup(t, SetupRecommended)
		allocs := func(calls int) uint64 {
			p, err := Params{Calls: calls}.withModel(f.Params).resolve()
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := r.run(context.Background(), p, su, 70, Reaches, 1); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			return after.Mallocs - before.Mallocs
		}
		allocs(40_000)
		small, large := allocs(10_000), allocs(40_000)
		if large > small+50 {
			t.Errorf("%s: %d allocations for 10k calls, %d for 40k", name, small, large)
		}
	}
}

func TestPausedUntil(t *testing.T) {
	ms := int64(time.Millisecond)
	s := &sim{model: model{pauseEvery: 2000 * ms, pauseLen: 100 * ms}, servers: servers{pausePhase: []int64{500 * ms, -1}}}
	for _, c := range []struct{ t, want int64 }{
		{0, 0}, {499 * ms, 0}, {500 * ms, 600 * ms}, {599 * ms, 600 * ms}, {600 * ms, 0}, {2550 * ms, 2600 * ms},
	} {
		if got := s.pausedUntil(0, c.t); got != c.want {
			t.Errorf("pausedUntil(%v) = %v, want %v", time.Duration(c.t), time.Duration(got), time.Duration(c.want))
		}
	}
	if s.pausedUntil(1, 550*ms) != 0 {
		t.Error("a replica that does not pause is paused")
	}
}
