package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// tailReport says what a run's slowest calls were: every successful measured call that took
// at least cutShare × the run's q-quantile, sorted by what its first attempt met and what
// hedging did for it. It is how a p99 that misses a target is taken apart: stragglers hedged
// late, stragglers a gate refused, or requests that only waited in a queue.
type tailReport struct {
	quantileMs, cutMs float64
	// classes counts the slow calls by "<kind> <fate>". Kinds: "straggler" (the first
	// attempt's service took 100 ms or more, the reference mixture's slow part), "queued" (it
	// waited over 30 ms for a worker), "ordinary". Fates: "hedged", "refused:<reason>" (the
	// first refusal's reason; the call was never hedged), "never due".
	classes map[string]int
	slow    int
	// delayMs is the 10th, 50th and 90th percentile of the hedge delay of the slow calls
	// that were hedged; zero when none was.
	delayMs [3]float64
	// Backlog refusals of every measured call, and how many came while some replica
	// actually had a worker idle, or an empty queue: what the reports, older than the
	// servers' state, did not show.
	backlogRefusals, refusedIdle, refusedEmptyQueue int
}

// tailComposition runs setup once and takes its tail apart (see tailReport).
func tailComposition(t *testing.T, p Params, setup Setup, load float64, mode string, seed uint64, q, cutShare float64) tailReport {
	t.Helper()
	type callTrace struct {
		wait0, svc0 int64 // the first attempt's; -1 until a worker starts it
		latency     int64
		ok          bool
		delay       time.Duration // of the first hedge
		hedged      bool
		refused     hedge.Reason
	}
	r := newRunner()
	rp, err := p.resolve()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(map[int]*callTrace)
	get := func(i int) *callTrace {
		c := calls[i]
		if c == nil {
			c = &callTrace{wait0: -1, svc0: -1}
			calls[i] = c
		}
		return c
	}
	var rep tailReport
	r.s.onService = func(call, attempt int, wait, svc int64) {
		if attempt == 0 {
			c := get(call)
			c.wait0, c.svc0 = wait, svc
		}
	}
	r.s.onEvent = func(call int, e hedge.Event) {
		c := get(call)
		switch e.Kind {
		case hedge.HedgeStarted:
			if !c.hedged {
				c.hedged, c.delay = true, e.Delay
			}
		case hedge.HedgeSuppressed:
			if c.refused == hedge.ReasonNone {
				c.refused = e.Reason
			}
			if e.Reason != hedge.ReasonBacklog {
				return
			}
			rep.backlogRefusals++
			idle, empty := false, false
			for k := range r.s.rlive {
				idle = idle || len(r.s.freeW[k]) > 0
				empty = empty || r.s.rlive[k] == 0
			}
			if idle {
				rep.refusedIdle++
			} else if empty {
				rep.refusedEmptyQueue++
			}
		}
	}
	r.s.onFinish = func(call int, latency int64) {
		c := get(call)
		c.latency, c.ok = latency, true
	}
	if _, err := r.run(t.Context(), rp, setup, load, mode, seed); err != nil {
		t.Fatal(err)
	}
	var lats []int64
	for _, c := range calls {
		if c.ok {
			lats = append(lats, c.latency)
		}
	}
	if len(lats) == 0 {
		t.Fatal("no call succeeded")
	}
	slices.Sort(lats)
	quantile := lats[min(int(q*float64(len(lats))), len(lats)-1)]
	cut := int64(cutShare * float64(quantile))
	rep.quantileMs, rep.cutMs = float64(quantile)/1e6, float64(cut)/1e6
	rep.classes = make(map[string]int)
	var delays []float64
	for _, c := range calls {
		if !c.ok || c.latency < cut || c.svc0 < 0 {
			continue
		}
		kind := "ordinary"
		switch {
		case c.svc0 >= int64(100*time.Millisecond):
			kind = "straggler"
		case c.wait0 > int64(30*time.Millisecond):
			kind = "queued"
		}
		fate := "never due"
		switch {
		case c.hedged:
			fate = "hedged"
			delays = append(delays, float64(c.delay)/1e6)
		case c.refused != hedge.ReasonNone:
			fate = "refused:" + c.refused.String()
		}
		rep.classes[kind+" "+fate]++
		rep.slow++
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		n := len(delays)
		rep.delayMs = [3]float64{delays[n/10], delays[n/2], delays[n*9/10]}
	}
	return rep
}

// String is the report as a few lines, classes in name order.
func (r tailReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "quantile %.1f ms; %d calls at or above %.1f ms:", r.quantileMs, r.slow, r.cutMs)
	keys := make([]string, 0, len(r.classes))
	for k := range r.classes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d;", k, r.classes[k])
	}
	fmt.Fprintf(&b, " hedge delay of those hedged p10/p50/p90 %.1f/%.1f/%.1f ms;", r.delayMs[0], r.delayMs[1], r.delayMs[2])
	fmt.Fprintf(&b, " backlog refusals %d, %d with a worker idle somewhere, %d more with a queue empty",
		r.backlogRefusals, r.refusedIdle, r.refusedEmptyQueue)
	return b.String()
}

// TestTailComposition: without hedging, no slow call is hedged or refused and stragglers
// make most of the tail; with server-assisted hedging behind four replicas of four workers
// at 70 %, stragglers are hedged, the tail's calls are all accounted for, and the backlog
// gate's refusals are counted.
func TestTailComposition(t *testing.T) {
	p := Params{Calls: scaled(50_000), Workers: 4, Replicas: 4, Clients: 32, Balancer: BalancerP2C}
	none := tailComposition(t, p, setupNamed(t, SetupNoHedge), 70, Ignored, 1, 0.99, 0.8)
	t.Logf("no hedge: %v", none)
	stragglers := 0
	for k, n := range none.classes {
		if !strings.HasSuffix(k, " never due") {
			t.Errorf("no hedge: %d slow calls %q", n, k)
		}
		if strings.HasPrefix(k, "straggler ") {
			stragglers += n
		}
	}
	if none.slow == 0 || 2*stragglers < none.slow {
		t.Errorf("no hedge: %d of %d slow calls are stragglers, want most", stragglers, none.slow)
	}
	if none.backlogRefusals != 0 {
		t.Errorf("no hedge: %d backlog refusals", none.backlogRefusals)
	}

	sa := tailComposition(t, p, setupNamed(t, SetupServerAssisted), 70, Ignored, 1, 0.99, 0.8)
	t.Logf("server-assisted: %v", sa)
	sum := 0
	for _, n := range sa.classes {
		sum += n
	}
	if sum != sa.slow || sa.slow == 0 {
		t.Errorf("server-assisted: classes sum to %d, slow calls %d", sum, sa.slow)
	}
	if sa.classes["straggler hedged"] == 0 {
		t.Errorf("server-assisted: no slow straggler was hedged: %v", sa)
	}
	if sa.quantileMs >= none.quantileMs {
		t.Errorf("server-assisted p99 %.1f ms, no hedge's %.1f", sa.quantileMs, none.quantileMs)
	}
	if d := sa.delayMs; !(d[0] > 0 && d[0] <= d[1] && d[1] <= d[2]) {
		t.Errorf("server-assisted: hedge delays %v", d)
	}
	if sa.backlogRefusals == 0 || sa.refusedIdle+sa.refusedEmptyQueue > sa.backlogRefusals {
		t.Errorf("server-assisted: %d backlog refusals, %d idle, %d empty", sa.backlogRefusals, sa.refusedIdle, sa.refusedEmptyQueue)
	}
}

// TestTailCompositionSweep prints the tail composition for the runs in HEDGE_TAIL
// ("replicas,load,seed,setup[,quantile];...", 16 workers split over the replicas, 32 clients,
// p2c, 100,000 calls, cancellation ignored), for the record; without it, it is skipped.
//
//	HEDGE_TAIL="4,70,1,server-assisted;1,85,6,server-assisted;4,95,3,server-assisted,0.999" \
//	  go test ./sim -run TestTailCompositionSweep -v
func TestTailCompositionSweep(t *testing.T) {
	for _, one := range sweepRuns(t, "HEDGE_TAIL", "tail compositions") {
		f := strings.Split(one, ",")
		if len(f) < 4 {
			t.Fatalf("%q: want replicas,load,seed,setup[,quantile]", one)
		}
		reps, err1 := strconv.Atoi(f[0])
		load, err2 := strconv.ParseFloat(f[1], 64)
		seed, err3 := strconv.ParseUint(f[2], 10, 64)
		// The setup's name may hold commas ("server-assisted, out-of-band"): the quantile is
		// a last field that is a number.
		q, name := 0.99, f[3:]
		if len(f) > 4 {
			if x, err := strconv.ParseFloat(strings.TrimSpace(f[len(f)-1]), 64); err == nil {
				q, name = x, f[3:len(f)-1]
			}
		}
		setup := strings.TrimSpace(strings.Join(name, ","))
		if err1 != nil || err2 != nil || err3 != nil || reps < 1 || 16%reps != 0 {
			t.Fatalf("%q: want replicas (dividing 16),load,seed,setup[,quantile]", one)
		}
		p := Params{Calls: 100_000, Workers: 16 / reps, Replicas: reps, Clients: 32, Balancer: BalancerP2C}
		t.Logf("%d×%d, %g %%, seed %d, %s, q %g: %v", reps, 16/reps, load, seed, setup, q,
			tailComposition(t, p, setupNamed(t, setup), load, Ignored, seed, q, 0.8))
	}
}
