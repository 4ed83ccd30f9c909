package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestClientDelay: a busy client is late to its own answers and timers, and nothing else
// changes: the servers carry the same load, latency grows by about the delay's median while
// the client is busy, and the same seed gives the same run.
func TestClientDelay(t *testing.T) {
	calls := scaled(40_000)
	always := ClientDelay{Every: time.Hour, For: time.Hour, Busy: 4 * time.Millisecond, Timers: time.Millisecond}
	base := mustRun(t, Params{Calls: calls}, SetupNoHedge, 50, Ignored, 1)
	busy := mustRun(t, Params{Calls: calls, ClientDelay: always}, SetupNoHedge, 50, Ignored, 1)
	if d := busy.UtilisationPct - base.UtilisationPct; d < -0.5 || d > 0.5 {
		t.Errorf("utilisation %.2f %% with a busy client, %.2f %% without: the servers must not notice", busy.UtilisationPct, base.UtilisationPct)
	}
	// An exponential delay of mean 4ms has a median of 2.8ms.
	if d := busy.P50Ms - base.P50Ms; d < 2 || d > 4 {
		t.Errorf("p50 %.2f ms with a busy client, %.2f ms without: want about 2.8 ms more", busy.P50Ms, base.P50Ms)
	}
	if again := mustRun(t, Params{Calls: calls, ClientDelay: always}, SetupNoHedge, 50, Ignored, 1); !equalPoints(busy, again) {
		t.Error("the same seed gave another run")
	}
	if _, err := Run(Params{Calls: calls, ClientDelay: ClientDelay{Busy: time.Millisecond}}, Setups(20 * time.Millisecond)[0], 50, Ignored, 1); err == nil {
		t.Error("a ClientDelay without a period was accepted")
	}
}

// TestRecommendedPaysOnABusyClient: the busy-client family moves the client's median by 40 %
// half of the time with no queue anywhere; the recommended default still hedges its
// stragglers there (the backlog gate looks past the client's own delay), where it used to
// suppress nearly every hedge and leave p99.9 at no hedge's.
func TestRecommendedPaysOnABusyClient(t *testing.T) {
	f, err := FamilyByName(FamilyBusyClient)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Calls: scaled(100_000)}.withModel(f.Params)
	nh := mustRun(t, p, SetupNoHedge, 30, Ignored, 1)
	rec := mustRun(t, p, SetupRecommended, 30, Ignored, 1)
	ratio, tail := PayoffRatio, 0.5
	if raceEnabled { // a tenth of the calls: a looser bound on a tail of fewer calls
		ratio, tail = 0.5, 1
	}
	if rec.P99Ms > ratio*nh.P99Ms || rec.P999Ms > tail*nh.P999Ms {
		t.Errorf("recommended p99 %.1f, p99.9 %.1f ms; no hedge %.1f, %.1f: want ≤ %.2f× and ≤ %.2f×",
			rec.P99Ms, rec.P999Ms, nh.P99Ms, nh.P999Ms, ratio, tail)
	}
	if n := rec.Suppressed["backlog"]; n > 100 {
		t.Errorf("%d hedges suppressed for backlog with no backlog anywhere", n)
	}
}

// TestClientDelaySends: a client late to send its calls delays each by the draw, counted from
// the call's arrival, and starts the call's timers only when it sends it: a fixed-delay hedge
// fires as often as with no delay, where the same delay on the answers makes it fire for
// every call whose answer it holds past the hedge delay.
func TestClientDelaySends(t *testing.T) {
	calls := scaled(20_000)
	sends := ClientDelay{Every: time.Hour, For: time.Hour, Sends: late(15 * time.Millisecond)}
	answers := ClientDelay{Every: time.Hour, For: time.Hour, Answers: late(15 * time.Millisecond)}
	base := mustRun(t, Params{Calls: calls}, SetupNoHedge, 30, Ignored, 1)
	sent := mustRun(t, Params{Calls: calls, ClientDelay: sends}, SetupNoHedge, 30, Ignored, 1)
	if d := sent.P50Ms - base.P50Ms; d < 14.5 || d > 15.5 {
		t.Errorf("p50 %.2f ms with every call sent 15 ms late, %.2f ms without: want 15 ms more", sent.P50Ms, base.P50Ms)
	}
	if d := sent.UtilisationPct - base.UtilisationPct; d < -0.5 || d > 0.5 {
		t.Errorf("utilisation %.2f %% with late sends, %.2f %% without: the servers must not notice", sent.UtilisationPct, base.UtilisationPct)
	}
	run := func(d ClientDelay) Point { return runFixedHedge(t, calls, d) }
	none, s, a := run(ClientDelay{}), run(sends), run(answers)
	if s.HedgeRate > none.HedgeRate+0.005 || a.HedgeRate < none.HedgeRate+0.2 {
		t.Errorf("hedge rate %.3f with no delay, %.3f with 15 ms late sends, %.3f with 15 ms late answers: want the sends' as none's, the answers' far above",
			none.HedgeRate, s.HedgeRate, a.HedgeRate)
	}
	if again := run(sends); !equalPoints(s, again) {
		t.Error("the same seed gave another run")
	}
}

// TestClientDelayWakeupsAndHedges: measured timer lateness delays every timer by its draw
// (a fixed-delay hedge then fires only for calls that outlive the delay and the lateness, and
// answers that much later),
// and measured hedge delays hold the hedges' answers, not the first attempts'.
func TestClientDelayWakeupsAndHedges(t *testing.T) {
	calls := scaled(20_000)
	run := func(d ClientDelay) Point { return runFixedHedge(t, calls, d) }
	none := run(ClientDelay{})
	wake := run(ClientDelay{Every: time.Hour, For: time.Hour, Wakeups: late(40 * time.Millisecond)})
	held := run(ClientDelay{Every: time.Hour, For: time.Hour, Hedges: late(200 * time.Millisecond)})
	// The p99 lies on hedged calls: each is answered 40 ms later, and fewer are hedged.
	if d := wake.P99Ms - none.P99Ms; d < 35 || d > 45 || wake.HedgeRate >= none.HedgeRate {
		t.Errorf("timers 40 ms late: p99 %.2f ms, hedge rate %.4f; on time: %.2f ms, %.4f: want the p99 40 ms later, fewer hedges",
			wake.P99Ms, wake.HedgeRate, none.P99Ms, none.HedgeRate)
	}
	if held.P50Ms != none.P50Ms || held.HedgeRate != none.HedgeRate || held.HedgeWinRate > none.HedgeWinRate/2 {
		t.Errorf("hedges' answers 200 ms late: p50 %.2f ms, hedge rate %.4f, win rate %.3f; on time: %.2f ms, %.4f, %.3f: want the same p50 and hedges, far fewer wins",
			held.P50Ms, held.HedgeRate, held.HedgeWinRate, none.P50Ms, none.HedgeRate, none.HedgeWinRate)
	}
	if err := (ClientDelay{Every: time.Hour, For: time.Hour, Wakeups: Empirical{}}).check(); err == nil {
		t.Error("an empty Wakeups distribution was accepted")
	}
}

// TestClientDelaySeries: a Series draws each event's delay from the samples measured nearest
// its moment (its call's arrival and the time since): delays measured during the warm-up leave the measured calls alone, where the
// same samples drawn independently (Sample, an Empirical) would delay one call in two.
func TestClientDelaySeries(t *testing.T) {
	calls := scaled(20_000)
	warm := int(0.1 * float64(calls))
	var s Series
	for i := range calls {
		s.Arrivals = append(s.Arrivals, time.Duration(i)*time.Millisecond)
		s.At = append(s.At, time.Duration(i)*time.Millisecond)
		d := time.Duration(0)
		if i < warm/2 {
			d = 50 * time.Millisecond
		}
		s.Samples = append(s.Samples, d)
	}
	r := rand.New(rand.NewPCG(1, 2))
	if got := s.SampleAt(r, warm/2-20, 10*time.Millisecond); got != 50*time.Millisecond {
		t.Errorf("SampleAt in the warm-up's first half = %v, want 50ms", got)
	}
	if got := s.SampleAt(r, calls+100, 0); got != 0 {
		t.Errorf("SampleAt past the last sample = %v, want the last samples' 0", got)
	}
	base := mustRun(t, Params{Calls: calls}, SetupNoHedge, 30, Ignored, 1)
	series := mustRun(t, Params{Calls: calls, ClientDelay: ClientDelay{Every: time.Hour, For: time.Hour, Answers: s}}, SetupNoHedge, 30, Ignored, 1)
	if series.P99Ms != base.P99Ms || series.P50Ms != base.P50Ms {
		t.Errorf("p50 %.2f, p99 %.2f ms with the delays in the warm-up; %.2f, %.2f without: want the same", series.P50Ms, series.P99Ms, base.P50Ms, base.P99Ms)
	}
	bad := ClientDelay{Every: time.Hour, For: time.Hour, Answers: Series{Arrivals: []time.Duration{0}, At: []time.Duration{2, 1}, Samples: []time.Duration{1, 1}}}
	if _, err := Run(Params{Calls: calls, ClientDelay: bad}, Setups(20 * time.Millisecond)[0], 30, Ignored, 1); err == nil {
		t.Error("a Series out of order was accepted")
	}
}

// late is a client delay of exactly d.
func late(d time.Duration) Distribution { return Empirical{Samples: []time.Duration{d}} }

// runFixedHedge runs the reference model at 30 %, cancellation ignored, seed 1, with a hedge
// 20 ms after each call is sent, every time, and the client delay d.
func runFixedHedge(t *testing.T, calls int, d ClientDelay) Point {
	t.Helper()
	var fixed Setup
	for _, st := range Setups(20 * time.Millisecond) {
		if st.Name == SetupNoBudget {
			fixed = st
		}
	}
	p, err := Run(Params{Calls: calls, ClientDelay: d}, fixed, 30, Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
