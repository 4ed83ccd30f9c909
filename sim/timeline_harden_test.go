package sim

import (
	"context"
	"testing"
	"time"
)

// A second's p99 is the nearest-rank p99 a Point reports, failed calls sorting after every
// success.
func TestTimelineSecondP99NearestRank(t *testing.T) {
	var lat []int64
	r := newSeconds(time.Hour)
	for i := 1; i <= 100; i++ {
		lat = append(lat, int64(i)*int64(time.Millisecond))
		r.ended(0, lat[i-1], nil)
	}
	if got, want := r.seconds()[0].P99Ms, quantileMs(lat, 0, 0.99); got != want || want != 99 {
		t.Errorf("100 calls of 1…100 ms: the second's p99 = %v ms, want %v (99)", got, want)
	}
	r = newSeconds(time.Hour)
	for _, l := range lat[:99] {
		r.ended(0, l, nil)
	}
	r.ended(0, 0, context.DeadlineExceeded)
	if got, want := r.seconds()[0].P99Ms, quantileMs(lat[:99], 1, 0.99); got != want || want != 99 {
		t.Errorf("99 calls of 1…99 ms and one failed: the second's p99 = %v, want %v (99)", got, want)
	}
}

// A call's latency in a timeline counts from its arrival, as in a Point: here a client that
// holds one call in flight keeps most calls waiting, and their wait counts.
func TestTimelineLatencyFromArrival(t *testing.T) {
	cfg := SweepConfig{Calls: 4000, Workers: 1, Clients: 1, ClientInFlight: 1,
		Setups: []string{SetupNoHedge}, Loads: []float64{90}, Modes: []string{Ignored}, Seeds: []uint64{1}}
	rep, err := Sweep(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pt := rep.Points[0]
	if pt.Collapse {
		t.Fatal("the run collapsed")
	}
	slowAfter := time.Duration(0.9 * pt.P50Ms * float64(time.Millisecond))
	tls, err := Timelines(context.Background(), cfg, slowAfter)
	if err != nil {
		t.Fatal(err)
	}
	calls, slow := 0, 0
	for _, s := range tls[0].Seconds {
		calls, slow = calls+s.Calls, slow+s.Slow
	}
	if calls != cfg.Calls {
		t.Errorf("the timeline counts %d calls, want %d", calls, cfg.Calls)
	}
	if measured := cfg.Calls * 9 / 10; slow < measured/2 {
		t.Errorf("the timeline has %d calls over %v, where over half of the %d measured ones (p50 %.1f ms) took longer", slow, slowAfter, measured, pt.P50Ms)
	}
}

// A call that reached its deadline before it left its client counts in a timeline: it failed.
func TestTimelineCountsCallsGivenUpUnsent(t *testing.T) {
	cfg := SweepConfig{Calls: 1000, Family: FamilyReference, Timeout: 50 * time.Millisecond,
		Setups: []string{SetupNoHedge}, Loads: []float64{50}, Modes: []string{Ignored}, Seeds: []uint64{1}}
	pl, err := cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	p := pl.params
	p.ClientDelay = ClientDelay{Every: time.Second, For: time.Second, Sends: Uniform{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond}}
	rec := newSeconds(200 * time.Millisecond)
	r := newRunner()
	r.s.onCallEnd = rec.ended
	pt, err := r.run(context.Background(), p, pl.setups[0], 50, Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pt.FailedPct != 100 {
		t.Fatalf("%.1f %% of calls failed; the test wants every call to wait past its deadline", pt.FailedPct)
	}
	calls, failed := 0, 0
	for _, s := range rec.seconds() {
		calls, failed = calls+s.Calls, failed+s.Failed
	}
	if calls != cfg.Calls || failed != cfg.Calls {
		t.Errorf("the timeline saw %d calls end, %d failed, of %d that failed", calls, failed, cfg.Calls)
	}
}

// A run that collapsed has no p99 in its timeline.
func TestTimelineCollapse(t *testing.T) {
	cfg := SweepConfig{Calls: 20_000, Setups: []string{SetupNoBudget}, Loads: []float64{95}, Modes: []string{Ignored}, Seeds: []uint64{1}}
	tls, err := Timelines(context.Background(), cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl := tls[0]; !tl.Collapse || !IsFailed(tl.P99Ms) {
		t.Errorf("hedging without a budget at 95 %%: timeline collapse %v, p99 %v ms; want a collapse and no p99", tl.Collapse, tl.P99Ms)
	}
}
