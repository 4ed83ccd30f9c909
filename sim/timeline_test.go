package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// second is one second of a run's virtual time, as its policies' events tell it: the calls
// that ended in it, how many of them took longer than slowAfter, the hedges sent and won,
// and the refusals by reason. It is how a p99 made by one episode is found: a burst of
// hedges at a backlog's onset shows as a second with many more hedges than its neighbours,
// few of them won, followed by seconds full of slow calls.
type second struct {
	calls, slow int
	hedges, won int
	refused     map[hedge.Reason]int
	latenciesMs []float64
	p99Ms       float64
}

// timeline runs setup once and returns its seconds, from the first to the last in which
// any event came. Every call counts, the warm-up's too: an episode does not respect it.
func timeline(t *testing.T, p Params, setup Setup, load float64, mode string, seed uint64, slowAfter time.Duration) ([]second, Point) {
	t.Helper()
	var (
		mu   sync.Mutex
		secs = map[int64]*second{}
	)
	at := func(tm time.Time) *second {
		k := tm.UnixNano() / int64(time.Second)
		s := secs[k]
		if s == nil {
			s = &second{refused: map[hedge.Reason]int{}}
			secs[k] = s
		}
		return s
	}
	user := setup.Config.Observer
	setup.Config.Observer = func(e hedge.Event) {
		if user != nil {
			user(e)
		}
		mu.Lock()
		defer mu.Unlock()
		s := at(e.Time)
		switch e.Kind {
		case hedge.HedgeStarted:
			s.hedges++
		case hedge.HedgeWon:
			s.won++
		case hedge.HedgeSuppressed:
			s.refused[e.Reason]++
		case hedge.CallFinished:
			s.calls++
			if e.Duration > slowAfter {
				s.slow++
			}
			s.latenciesMs = append(s.latenciesMs, float64(e.Duration)/float64(time.Millisecond))
		}
	}
	pt, err := Run(p, setup, load, mode, seed)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]int64, 0, len(secs))
	for k := range secs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []second
	for k := keys[0]; len(keys) > 0 && k <= keys[len(keys)-1]; k++ {
		s := secs[k]
		if s == nil {
			s = &second{refused: map[hedge.Reason]int{}}
		}
		if n := len(s.latenciesMs); n > 0 {
			slices.Sort(s.latenciesMs)
			s.p99Ms = s.latenciesMs[n*99/100]
		}
		out = append(out, *s)
	}
	return out, pt
}

// TestTimeline: a run's seconds account for every call, no hedge sends and refuses nothing,
// and a hedging setup's hedges are counted where they were sent, its wins never more than
// its hedges.
func TestTimeline(t *testing.T) {
	p := Params{Calls: scaled(20_000), Clients: 32}
	count := func(secs []second) (calls, hedges, won, refused int) {
		for _, s := range secs {
			calls += s.calls
			hedges += s.hedges
			won += s.won
			for _, n := range s.refused {
				refused += n
			}
		}
		return
	}
	// The run goes on arriving calls until the last measured one is over, so that its load
	// holds to the end: a few more calls than asked finish.
	enough := func(calls int) bool { return calls >= p.Calls && calls <= p.Calls*21/20 }
	none, _ := timeline(t, p, setupNamed(t, SetupNoHedge), 70, Ignored, 1, 100*time.Millisecond)
	calls, hedges, won, refused := count(none)
	if !enough(calls) || hedges != 0 || won != 0 || refused != 0 {
		t.Errorf("no hedge: %d calls for %d asked, %d hedges, %d won, %d refused", calls, p.Calls, hedges, won, refused)
	}
	// At 70 % of 16 workers whose mean service is 14.1 ms, calls arrive at about 794 a second.
	if n, want := float64(len(none)), float64(p.Calls)/794; n < 0.8*want || n > 1.25*want+1 {
		t.Errorf("no hedge: %v seconds, want about %.0f", n, want)
	}
	rec, pt := timeline(t, p, setupNamed(t, SetupRecommended), 70, Ignored, 1, 100*time.Millisecond)
	calls, hedges, won, _ = count(rec)
	if !enough(calls) || hedges == 0 || won > hedges {
		t.Errorf("recommended: %d calls for %d asked, %d hedges, %d won", calls, p.Calls, hedges, won)
	}
	// The point's hedge rate is per measured call (those after the warm-up); the timeline
	// counts every call's hedges, so it sees at least as many.
	rp, err := p.resolve()
	if err != nil {
		t.Fatal(err)
	}
	measuredCalls := pt.Calls - int(rp.WarmupFraction*float64(pt.Calls))
	if measured := pt.HedgeRate * float64(measuredCalls); float64(hedges) < measured-0.5 {
		t.Errorf("recommended: %d hedges in the timeline, %.0f in the point", hedges, measured)
	}
	slowRec, slowNone := 0, 0
	for _, s := range rec {
		slowRec += s.slow
	}
	for _, s := range none {
		slowNone += s.slow
	}
	if slowRec >= slowNone {
		t.Errorf("recommended: %d calls over 100 ms, no hedge %d", slowRec, slowNone)
	}
}

// TestTimelineSweep prints, second by second, the runs in HEDGE_TIMELINE
// ("family,load,seed,setup[,mode];...": a family of Families, cancellation ignored unless a
// last field says reaches, 100,000 calls) beside the same run without hedging, for the
// record; without it, it is skipped.
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
		var fam *Family
		for _, x := range Families() {
			if x.Name == strings.TrimSpace(f[0]) {
				fam = &x
				break
			}
		}
		load, err1 := strconv.ParseFloat(f[1], 64)
		seed, err2 := strconv.ParseUint(f[2], 10, 64)
		if fam == nil || err1 != nil || err2 != nil {
			t.Fatalf("%q: want family,load,seed,setup[,mode]", one)
		}
		setup := strings.TrimSpace(strings.Join(f[3:], ","))
		p := fam.Params
		p.Calls = 100_000
		slowAfter := 200 * time.Millisecond
		none, nonePt := timeline(t, p, setupNamed(t, SetupNoHedge), load, mode, seed, slowAfter)
		with, withPt := timeline(t, p, setupNamed(t, setup), load, mode, seed, slowAfter)
		var b strings.Builder
		fmt.Fprintf(&b, "%s, %g %%, seed %d, cancellation %s: p99 no hedge %.1f ms, %s %.1f ms\n", fam.Name, load, seed, mode, nonePt.P99Ms, setup, withPt.P99Ms)
		fmt.Fprintf(&b, "second | no hedge: calls, over %v, p99 ms | %s: calls, over %v, p99 ms, hedges, won, refused\n", slowAfter, setup, slowAfter)
		for i := range max(len(none), len(with)) {
			var n, w second
			if i < len(none) {
				n = none[i]
			}
			if i < len(with) {
				w = with[i]
			}
			reasons := make([]string, 0, len(w.refused))
			for r, c := range w.refused {
				reasons = append(reasons, fmt.Sprintf("%v %d", r, c))
			}
			slices.Sort(reasons)
			fmt.Fprintf(&b, "%4d | %5d %5d %6.1f | %5d %5d %6.1f %4d %4d %s\n", i, n.calls, n.slow, n.p99Ms, w.calls, w.slow, w.p99Ms, w.hedges, w.won, strings.Join(reasons, ", "))
		}
		t.Log(b.String())
	}
}
