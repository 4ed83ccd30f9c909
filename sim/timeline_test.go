package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimelines: a run's seconds account for every call, no hedge sends and refuses nothing,
// and a hedging setup's hedges are counted where they were sent, its wins never more than its
// hedges. A timeline asks for one point.
func TestTimelines(t *testing.T) {
	cfg := SweepConfig{Calls: scaled(20_000), Clients: 32, Setups: []string{SetupNoHedge, SetupRecommended},
		Loads: []float64{70}, Modes: []string{Ignored}, Seeds: []uint64{1}}
	tls, err := Timelines(context.Background(), cfg, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(tls) != 2 || tls[0].Setup != SetupNoHedge || tls[1].Setup != SetupRecommended {
		t.Fatalf("timelines of %v", tls)
	}
	type sums struct{ calls, slow, hedges, won, refused int }
	count := func(tl Timeline) (s sums) {
		for _, sec := range tl.Seconds {
			s.calls += sec.Calls
			s.slow += sec.Slow
			s.hedges += sec.Hedges
			s.won += sec.Won
			for _, n := range sec.Refused {
				s.refused += n
			}
			if sec.Calls > 0 && sec.P99Ms <= 0 {
				t.Errorf("%s: a second of %d calls with p99 %v", tl.Setup, sec.Calls, sec.P99Ms)
			}
		}
		return s
	}
	// The run goes on arriving calls until the last measured one is over, so that its load
	// holds to the end: a few more calls than asked finish.
	enough := func(calls int) bool { return calls >= cfg.Calls && calls <= cfg.Calls*21/20 }
	none, rec := count(tls[0]), count(tls[1])
	if !enough(none.calls) || none.hedges != 0 || none.won != 0 || none.refused != 0 {
		t.Errorf("no hedge: %+v for %d calls asked", none, cfg.Calls)
	}
	// At 70 % of 16 workers whose mean service is 14.1 ms, calls arrive at about 794 a second.
	if n, want := float64(len(tls[0].Seconds)), float64(cfg.Calls)/794; n < 0.8*want || n > 1.25*want+1 {
		t.Errorf("no hedge: %v seconds, want about %.0f", n, want)
	}
	if !enough(rec.calls) || rec.hedges == 0 || rec.won > rec.hedges || rec.refused == 0 {
		t.Errorf("recommended: %+v for %d calls asked", rec, cfg.Calls)
	}
	if rec.slow >= none.slow {
		t.Errorf("recommended: %d calls over 100 ms, no hedge %d", rec.slow, none.slow)
	}
	if tls[1].P99Ms <= 0 || tls[1].P99Ms >= tls[0].P99Ms {
		t.Errorf("p99: recommended %.1f ms, no hedge %.1f", tls[1].P99Ms, tls[0].P99Ms)
	}
	// The point's hedge rate is per measured call (those after the warm-up, the first tenth);
	// the timeline counts every call's hedges, so it sees at least as many.
	pt, err := Run(Params{Calls: cfg.Calls, Clients: 32}, setupNamed(t, SetupRecommended), 70, Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.P99Ms != tls[1].P99Ms {
		t.Errorf("recommended: the timeline's p99 %v, the point's %v", tls[1].P99Ms, pt.P99Ms)
	}
	if measured := pt.HedgeRate * float64(pt.Calls) * 0.9; float64(rec.hedges) < measured-0.5 {
		t.Errorf("recommended: %d hedges in the timeline, %.0f in the point", rec.hedges, measured)
	}

	// A failed call is slower than any success: where a second's p99 or the run's lands on
	// one, it reads Failed, and timeline.json writes it as null and reads it back.
	dl, err := Timelines(context.Background(), SweepConfig{Family: FamilyDeadline, Calls: scaled(20_000), Setups: []string{SetupNoHedge},
		Loads: []float64{95}, Modes: []string{Ignored}, Seeds: []uint64{1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	failed, failedSeconds := 0, 0
	for _, sec := range dl[0].Seconds {
		failed += sec.Failed
		if sec.Failed > sec.Slow || sec.Failed > sec.Calls {
			t.Errorf("deadline: a second of %d calls, %d failed, %d slow", sec.Calls, sec.Failed, sec.Slow)
		}
		if IsFailed(sec.P99Ms) {
			failedSeconds++
		}
	}
	if failed == 0 || failedSeconds == 0 || !IsFailed(dl[0].P99Ms) {
		t.Errorf("deadline at 95 %%: %d failed calls, %d seconds with a failed p99, the run's p99 %v", failed, failedSeconds, dl[0].P99Ms)
	}
	js, err := json.Marshal(dl)
	if err != nil {
		t.Fatal(err)
	}
	var back []Timeline
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, dl) {
		t.Errorf("timeline.json does not read back as written:\n%s", js)
	}

	for _, bad := range []SweepConfig{
		{Loads: []float64{30, 70}, Modes: []string{Ignored}, Seeds: []uint64{1}},
		{Loads: []float64{70}, Modes: []string{"both"}, Seeds: []uint64{1}},
		{Loads: []float64{70}, Modes: []string{Ignored}},
	} {
		if _, err := Timelines(context.Background(), bad, 0); !errors.Is(err, ErrTimelinePoint) {
			t.Errorf("Timelines(%+v): %v, want ErrTimelinePoint", bad, err)
		}
	}
	if _, err := Timelines(context.Background(), cfg, -time.Millisecond); err == nil {
		t.Error("Timelines with a negative slowAfter: no error")
	}
}

// TestTimelineSweep prints, second by second, the runs in HEDGE_TIMELINE
// ("family,load,seed,setup[,mode];...": a family of Families, cancellation ignored unless a
// last field says reaches, 100,000 calls) beside the same run without hedging, for the
// record; without it, it is skipped. hedgesim -timeline writes the same for any model.
//
//	HEDGE_TIMELINE="fleet-large,95,8,recommended" go test ./sim -run TestTimelineSweep -v
func TestTimelineSweep(t *testing.T) {
	for _, one := range sweepRuns(t, "HEDGE_TIMELINE", "timelines") {
		f := strings.Split(one, ",")
		if len(f) < 4 {
			t.Fatalf("%q: want family,load,seed,setup[,mode]", one)
		}
		mode := Ignored
		if last := strings.TrimSpace(f[len(f)-1]); len(f) > 4 && (last == Ignored || last == Reaches) {
			mode, f = last, f[:len(f)-1]
		}
		load, err1 := strconv.ParseFloat(f[1], 64)
		seed, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: want family,load,seed,setup[,mode]", one)
		}
		setup := strings.TrimSpace(strings.Join(f[3:], ","))
		tls, err := Timelines(context.Background(), SweepConfig{Family: strings.TrimSpace(f[0]), Calls: 100_000,
			Setups: []string{SetupNoHedge, setup}, Loads: []float64{load}, Modes: []string{mode}, Seeds: []uint64{seed}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		none, with := tls[0], tls[len(tls)-1]
		var b strings.Builder
		fmt.Fprintf(&b, "%s, %g %%, seed %d, cancellation %s: p99 no hedge %.1f ms, %s %.1f ms\n", f[0], load, seed, mode, none.P99Ms, setup, with.P99Ms)
		fmt.Fprintf(&b, "second | no hedge: calls, over %vms, p99 ms | %s: calls, over %vms, p99 ms, hedges, won, refused\n", none.SlowAfterMs, setup, with.SlowAfterMs)
		for i := range max(len(none.Seconds), len(with.Seconds)) {
			var n, w Second
			if i < len(none.Seconds) {
				n = none.Seconds[i]
			}
			if i < len(with.Seconds) {
				w = with.Seconds[i]
			}
			reasons := make([]string, 0, len(w.Refused))
			for r, c := range w.Refused {
				reasons = append(reasons, fmt.Sprintf("%s %d", r, c))
			}
			slices.Sort(reasons)
			fmt.Fprintf(&b, "%4d | %5d %5d %6.1f | %5d %5d %6.1f %4d %4d %s\n", i, n.Calls, n.Slow, n.P99Ms, w.Calls, w.Slow, w.P99Ms, w.Hedges, w.Won, strings.Join(reasons, ", "))
		}
		t.Log(b.String())
	}
}
