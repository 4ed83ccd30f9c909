package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

func setup(t testing.TB, name string) Setup {
	t.Helper()
	for _, s := range Setups(0) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no setup %q", name)
	return Setup{}
}

func mustRun(t testing.TB, p Params, name string, load float64, mode string, seed uint64) Point {
	t.Helper()
	pt, err := Run(p, setup(t, name), load, mode, seed)
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

func TestSetupNames(t *testing.T) {
	want := []string{"no hedge", "hedge, no budget", "hedge, default budget", "hedge, budget 5 %",
		"hedge, default budget, adaptive limit", "3 attempts, no budget", "recommended", "recommended, adaptive limit", "tied requests", "start-aware", "server-assisted", "server-assisted, out-of-band", "deadline-aware"}
	got := Setups(0)
	if len(got) != len(want) {
		t.Fatalf("%d setups, want %d", len(got), len(want))
	}
	for i, s := range got {
		if s.Name != want[i] {
			t.Errorf("setup %d is %q, want %q", i, s.Name, want[i])
		}
		if _, err := hedge.New(s.Config); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for i, n := range ReferenceSetups {
		if n != want[i] {
			t.Errorf("ReferenceSetups[%d] = %q, want %q", i, n, want[i])
		}
	}
}

// TestNoHedgeMatchesEngine: driving every call through the core's state machine with no
// trigger must give exactly the queue the bare engine gives, which the Erlang C, utilisation and
// tail tests check against theory.
func TestNoHedgeMatchesEngine(t *testing.T) {
	calls := scaled(50_000)
	want := runPlain(16, ReferenceMixture(), calls, 0.85, 3)
	for _, mode := range []string{Ignored, Reaches} {
		got := mustRun(t, Params{Calls: calls}, SetupNoHedge, 85, mode, 3)
		if len(got.Suppressed) != 0 {
			t.Errorf("%s: suppressed %v", mode, got.Suppressed)
		}
		got.Setup, got.LoadPct, got.Cancellation, got.Seed, got.Suppressed = "", 0, "", 0, nil
		got.Replicas, got.Clients = 0, 0
		if !equalPoints(got, want) {
			t.Errorf("%s: core-driven %+v\nengine alone %+v", mode, got, want)
		}
	}
}

func equalPoints(a, b Point) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestHedgeRateLowLoad: at low load a call almost never waits, so with After(20ms) and no
// budget the share of calls that hedge is the share of service times above 20ms:
// 0.98·P(lognormal > 20ms) + 0.02.
func TestHedgeRateLowLoad(t *testing.T) {
	pTail := 0.5 * math.Erfc(math.Log(2)/0.25/math.Sqrt2)
	want := 0.98*pTail + 0.02
	for _, mode := range []string{Ignored, Reaches} {
		p := mustRun(t, Params{Calls: scaled(200_000)}, SetupNoBudget, 10, mode, 1)
		if rel := math.Abs(p.HedgeRate-want) / want; rel > 0.05 {
			t.Errorf("%s: hedge rate %.5f, want %.5f", mode, p.HedgeRate, want)
		}
		// A hedge sent at 20ms against a hiccup (≥100ms) wins nearly always.
		if p.HedgeWinRate < 0.8 || p.HedgeWinRate > 1 {
			t.Errorf("%s: win rate %.3f", mode, p.HedgeWinRate)
		}
		if math.Abs(p.RequestsPerCall-(1+p.HedgeRate)) > 1e-9 && mode == Ignored {
			t.Errorf("%s: %.5f requests per call with hedge rate %.5f", mode, p.RequestsPerCall, p.HedgeRate)
		}
		if p.P99Ms > 40 || p.P99Ms < 20 {
			t.Errorf("%s: p99 %.1f ms: hedging at 20ms should cut the 200ms hiccup tail", mode, p.P99Ms)
		}
	}
}

// TestCancellationAccounting checks what "reached the server" and "wasted work" mean in each
// mode, on tied requests sent at once in the one FIFO queue: the primary is always queued
// first, so it always starts service first and the tied copy is cancelled while queued.
func TestCancellationAccounting(t *testing.T) {
	const calls = 20_000
	runTied := func(mode string) Point {
		t.Helper()
		p, err := Run(Params{Calls: calls}, tiedAtOnce, 30, mode, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ig, re := runTied(Ignored), runTied(Reaches)
	// Ignored: the server serves both copies, one of them for nothing.
	if ig.RequestsPerCall != 2 || ig.HedgeRate != 1 {
		t.Errorf("ignored: requests per call %v, hedge rate %v; want 2 and 1", ig.RequestsPerCall, ig.HedgeRate)
	}
	if ig.WastedWorkPct < 45 || ig.WastedWorkPct > 55 {
		t.Errorf("ignored: wasted work %.1f%%, want about half", ig.WastedWorkPct)
	}
	if ig.UtilisationPct < 55 {
		t.Errorf("ignored: utilisation %.1f%%, want about twice the 30%% load", ig.UtilisationPct)
	}
	// Reaches: the queued copy leaves the queue without reaching the server.
	if re.RequestsPerCall != 1 || re.WastedWorkPct != 0 || re.HedgeWinRate != 0 {
		t.Errorf("reaches: requests per call %v, wasted %v%%, win rate %v; want 1, 0, 0", re.RequestsPerCall, re.WastedWorkPct, re.HedgeWinRate)
	}
	plain := runPlain(16, ReferenceMixture(), calls, 0.3, 1)
	if re.P99Ms != plain.P99Ms || re.UtilisationPct != plain.UtilisationPct {
		t.Errorf("reaches: p99 %v, utilisation %v; the queue without the copies gives %v, %v", re.P99Ms, re.UtilisationPct, plain.P99Ms, plain.UtilisationPct)
	}

	// Reaches, with a hedge that wins against a hiccup: the loser frees its worker when it is
	// cancelled, so only the time it was served is wasted, and much less work is done than
	// when the server finishes every loser.
	hi := mustRun(t, Params{Calls: calls}, SetupNoBudget, 30, Ignored, 1)
	hr := mustRun(t, Params{Calls: calls}, SetupNoBudget, 30, Reaches, 1)
	if !(hr.WastedWorkPct > 0 && hr.WastedWorkPct < hi.WastedWorkPct/2) {
		t.Errorf("wasted work: reaches %.2f%%, ignored %.2f%%", hr.WastedWorkPct, hi.WastedWorkPct)
	}
	if !(hr.UtilisationPct < hi.UtilisationPct) {
		t.Errorf("utilisation: reaches %.2f%%, ignored %.2f%%", hr.UtilisationPct, hi.UtilisationPct)
	}
}

// TestCollapse: without a budget, hedging at 95% load in "ignored" mode multiplies the load
// and the queue never drains. The run must say so and stop early, after bounded work.
func TestCollapse(t *testing.T) {
	const calls = 200_000
	p := mustRun(t, Params{Calls: calls}, SetupNoBudget, 95, Ignored, 1)
	if !p.Collapse {
		t.Fatalf("not reported as a collapse: %+v", p)
	}
	if p.P50Ms != 0 || p.P99Ms != 0 || p.P999Ms != 0 {
		t.Errorf("collapse with percentiles %v %v %v", p.P50Ms, p.P99Ms, p.P999Ms)
	}
	if p.Calls >= calls || p.Events > calls {
		t.Errorf("collapse ran %d calls, %d events: the work is not bounded", p.Calls, p.Events)
	}
	// A slower collapse: the default budget adds 10% of load at 95%, which the queue cannot
	// absorb; it shows as a long, growing queue at the end of the run.
	q := mustRun(t, Params{Calls: scaled(100_000)}, SetupDefaultBudget, 95, Ignored, 1)
	if !q.Collapse {
		t.Errorf("default budget at 95%%, ignored: not a collapse: %+v", q)
	}
	// Stable points are not collapses, however loaded.
	for _, name := range []string{SetupNoHedge, SetupDefaultBudget} {
		if r := mustRun(t, Params{Calls: scaled(100_000)}, name, 95, Reaches, 1); r.Collapse {
			t.Errorf("%s at 95%%, reaches: reported as a collapse", name)
		}
	}
}

func smallSweep(seed uint64, par int) SweepConfig {
	return SweepConfig{
		Calls:       scaled(20_000),
		Seeds:       []uint64{seed},
		Loads:       []float64{50, 95},
		Setups:      []string{SetupNoBudget, SetupDefaultBudget, SetupAdaptiveLimit, SetupRecommended},
		Parallelism: par,
	}
}

func sweepJSON(t *testing.T, cfg SweepConfig) []byte {
	t.Helper()
	r, err := Sweep(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeterminism: the same seed gives the same report byte for byte, however many goroutines
// run it; another seed gives another report.
func TestDeterminism(t *testing.T) {
	a := sweepJSON(t, smallSweep(1, 2))
	b := sweepJSON(t, smallSweep(1, 1))
	if !bytes.Equal(a, b) {
		t.Errorf("same seed, different reports:\n%s\n%s", a, b)
	}
	c := sweepJSON(t, smallSweep(2, 2))
	if bytes.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same report")
	}
}

func TestSweepOrderAndProgress(t *testing.T) {
	cfg := SweepConfig{
		Workers: 4, Service: Exponential{MeanTime: 5 * time.Millisecond}, HedgeDelay: 15 * time.Millisecond,
		Calls: 2000, Seeds: []uint64{7, 8}, Loads: []float64{60, 20},
		Setups: []string{SetupTiedRequests, SetupNoHedge}, Modes: []string{Reaches, Ignored},
		Extra: []Setup{{Name: "mine", Config: hedge.Config{Trigger: hedge.After(time.Millisecond)}}},
	}
	var calls []int
	r, err := Sweep(context.Background(), cfg, func(done, total int) {
		if total != 24 {
			t.Errorf("total %d, want 24", total)
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 24 || calls[23] != 24 {
		t.Errorf("progress calls %v", calls)
	}
	i := 0
	for _, s := range []string{SetupTiedRequests, SetupNoHedge, "mine"} {
		for _, l := range []float64{60, 20} {
			for _, m := range []string{Reaches, Ignored} {
				for _, sd := range []uint64{7, 8} {
					p := r.Points[i]
					if p.Setup != s || p.LoadPct != l || p.Cancellation != m || p.Seed != sd {
						t.Fatalf("point %d is %s/%v/%s/%d, want %s/%v/%s/%d", i, p.Setup, p.LoadPct, p.Cancellation, p.Seed, s, l, m, sd)
					}
					i++
				}
			}
		}
	}
	m := r.Model
	if m.Workers != 4 || m.MeanServiceMs != 5 || m.HedgeDelayMs != 15 || m.Calls != 2000 || m.WarmupFraction != 0.1 ||
		len(m.Setups) != 3 || m.Setups[2] != "mine" || len(m.Cancellations) != 2 || m.Cancellations[0] != Reaches ||
		!strings.HasPrefix(m.ServiceTime, "exponential") {
		t.Errorf("model %+v", m)
	}
}

func TestSweepDefaults(t *testing.T) {
	pl, err := SweepConfig{}.plan()
	if err != nil {
		t.Fatal(err)
	}
	m := pl.model
	if m.Workers != 16 || m.Calls != 200_000 || m.HedgeDelayMs != 20 || len(m.Setups) != len(Setups(0)) ||
		len(m.LoadsPct) != 5 || len(m.Seeds) != 2 || len(m.Cancellations) != 2 || math.Abs(m.MeanServiceMs-14.11108) > 1e-4 {
		t.Errorf("default model %+v", m)
	}
	pl, err = SweepConfig{Setups: []string{"all"}, Modes: []string{"both"}}.plan()
	if err != nil || len(pl.setups) != len(Setups(0)) || len(pl.modes) != 2 {
		t.Errorf("all/both: %v setups, %v modes, %v", len(pl.setups), pl.modes, err)
	}
}

func TestSweepErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  SweepConfig
		want string
	}{
		{SweepConfig{Setups: []string{"nope"}}, `unknown setup "nope"`},
		{SweepConfig{Modes: []string{"sometimes"}}, "cancellation"},
		{SweepConfig{Loads: []float64{-5}}, "load"},
		{SweepConfig{Workers: -1}, "Workers"},
		{SweepConfig{Calls: -1}, "Calls"},
		{SweepConfig{HedgeDelay: -1}, "HedgeDelay"},
		{SweepConfig{WarmupFraction: 1}, "WarmupFraction"},
		{SweepConfig{Service: Empirical{}}, "Empirical"},
		{SweepConfig{Extra: []Setup{{Name: "bad", Config: hedge.Config{Attempts: -1}}}}, `setup "bad"`},
		{SweepConfig{Setups: []string{SetupNoHedge}, Extra: []Setup{{Name: SetupNoHedge}}}, "already used"},
	} {
		_, err := Sweep(context.Background(), c.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.cfg, err, c.want)
		}
	}
	if _, err := Run(Params{}, Setup{}, 50, "maybe", 1); err == nil {
		t.Error("Run accepted mode \"maybe\"")
	}
}

func TestSweepCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Sweep(ctx, smallSweep(1, 2), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	// Cancelled between points.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	n := 0
	cfg := smallSweep(1, 1)
	cfg.Calls = 5000
	_, err = Sweep(ctx, cfg, func(done, total int) {
		n++
		if done == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || n >= 8 {
		t.Errorf("cancelled after 2 points: error %v after %d points", err, n)
	}
	// Cancelled in the middle of a long run: the run notices within a bounded number of events.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	events := 0
	obs := func(e hedge.Event) {
		events++
		if events == 1000 {
			cancel()
		}
	}
	_, err = Sweep(ctx, SweepConfig{
		Calls: 1_000_000, Seeds: []uint64{1}, Loads: []float64{50}, Modes: []string{Ignored}, Parallelism: 1,
		Extra: []Setup{{Name: "observed", Config: hedge.Config{Observer: obs}}},
	}, nil)
	if !errors.Is(err, context.Canceled) || events > 300_000 {
		t.Errorf("cancelled mid-run: error %v after %d events", err, events)
	}
}

// TestNoAllocationPerCall: a runner reused for a second, longer run allocates no more than
// for a shorter one: nothing is allocated per call or per event in steady state.
func TestNoAllocationPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := newRunner()
	params, err := Params{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{SetupNoHedge, SetupNoBudget, SetupDefaultBudget, SetupAdaptiveLimit, SetupThreeAttempts, SetupRecommended, SetupTiedRequests} {
		su := setup(t, name)
		allocs := func(calls int) uint64 {
			p := params
			p.Calls = calls
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := r.run(context.Background(), p, su, 70, Reaches, 1); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			return after.Mallocs - before.Mallocs
		}
		allocs(40_000) // grow the buffers
		small, large := allocs(10_000), allocs(40_000)
		if large > small+50 {
			t.Errorf("%s: %d allocations for 10k calls, %d for 40k: about %.2f per call", name, small, large, float64(large-small)/30_000)
		}
	}
}
