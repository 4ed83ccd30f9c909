package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

func TestQuantileCountsFailures(t *testing.T) {
	ms := int64(time.Millisecond)
	sorted := []int64{1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms, 9 * ms}
	for _, c := range []struct {
		failed int
		q      float64
		want   float64
	}{
		{0, 0.5, 5},       // rank ceil(4.5) = 5 of 9
		{1, 0.5, 5},       // rank 5 of 10
		{1, 0.9, 9},       // rank 9 of 10: the slowest success
		{1, 0.91, Failed}, // rank 10 of 10: the failure
		{9, 0.5, 9},       // rank 9 of 18: the slowest success
		{10, 0.5, Failed}, // rank 10 of 19 lands on a failure
	} {
		if got := quantileMs(sorted, c.failed, c.q); got != c.want {
			t.Errorf("quantileMs(9 successes, %d failed, %v) = %v, want %v", c.failed, c.q, got, c.want)
		}
	}
	if got := quantileMs(nil, 3, 0.5); !IsFailed(got) {
		t.Errorf("every call failed: p50 = %v, want failed", got)
	}
}

// failingClient fails every call whose index is a multiple of every (2 % for 50) at once, as a
// limit rejection does, and sends the others once.
type failingClient struct{ every int }

func (c failingClient) arrive(s *sim, sl int32) {
	if s.slots[sl].idx%c.every == 0 {
		s.finish(sl, fmt.Errorf("refused: %w", hedge.ErrLimitExceeded))
		return
	}
	if s.slots[sl].idx%c.every == 1 {
		s.finish(sl, errors.New("every attempt failed"))
		return
	}
	s.startAttempt(sl, 0)
}
func (failingClient) started(s *sim, sl int32, k int)            {}
func (failingClient) done(s *sim, sl int32, k int)               { s.finish(sl, nil) }
func (failingClient) timer(s *sim, sl int32)                     {}
func (failingClient) refused(s *sim, sl int32, k int)            {}
func (failingClient) load(s *sim, c int32, rp int, l hedge.Load) {}
func (failingClient) deadline(s *sim, sl int32)                  {}

func TestFailedCallsAreSlowest(t *testing.T) {
	d := Exponential{MeanTime: 10 * time.Millisecond}
	s := newSim()
	calls := 20000
	s.reset(runParams{
		workers: 4, dist: d, calls: calls, warm: calls / 10, maxQueue: 8000, maxEvents: 1e7,
		lambda: 0.5 * 4 / d.Mean().Seconds(), seed: 1,
	}, failingClient{every: 100}) // 1 % rejected + 1 % failed otherwise
	s.run(nil)
	var p Point
	s.measure(&p)
	if p.FailedPct < 1.9 || p.FailedPct > 2.1 || p.RejectedPct < 0.9 || p.RejectedPct > 1.1 {
		t.Errorf("failed %v %%, rejected %v %%; want 2 and 1", p.FailedPct, p.RejectedPct)
	}
	if !IsFailed(p.P99Ms) || !IsFailed(p.P999Ms) {
		t.Errorf("p99 %v, p99.9 %v with 2 %% failed calls; want both failed", p.P99Ms, p.P999Ms)
	}
	if IsFailed(p.P50Ms) || p.P50Ms <= 0 {
		t.Errorf("p50 = %v; want a latency", p.P50Ms)
	}
	// The mean of the successes alone would read lower the more calls failed.
	if !IsFailed(p.MeanMs) {
		t.Errorf("mean %v ms with 2 %% failed calls; want failed", p.MeanMs)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"p99_ms":null`) || !strings.Contains(string(b), `"p999_ms":null`) || !strings.Contains(string(b), `"mean_ms":null`) {
		t.Errorf("JSON %s: want null percentiles and mean", b)
	}
	var back Point
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !IsFailed(back.P99Ms) || !IsFailed(back.MeanMs) || back.P50Ms != p.P50Ms || back.FailedPct != p.FailedPct {
		t.Errorf("round trip: %+v, want %+v", back, p)
	}
	var missing Point
	if err := json.Unmarshal([]byte(`{"setup":"x"}`), &missing); err != nil || missing.P99Ms != 0 || missing.MeanMs != 0 {
		t.Errorf("a missing percentile reads %v, a missing mean %v (%v), want 0", missing.P99Ms, missing.MeanMs, err)
	}
	// Without failures the mean is every call's.
	if got := MeanMs([]int64{1e6, 3e6}, 0, false); got != 2 {
		t.Errorf("MeanMs of 1 and 3 ms = %v, want 2", got)
	}
	if got := MeanMs([]int64{1e6}, 0, true); got != 0 {
		t.Errorf("MeanMs of a collapsed run = %v, want 0", got)
	}
}

// The adaptive limit fails calls at high load with cancellation ignored: those calls must show
// in failed_pct and in the percentiles, not vanish from them.
func TestLimitFailuresInPercentiles(t *testing.T) {
	var setup Setup
	for _, s := range Setups(0) {
		if s.Name == SetupRecommendedLimit {
			setup = s
		}
	}
	p, err := Run(Params{Calls: 60000}, setup, 95, Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.FailedPct == 0 || p.FailedPct != p.RejectedPct {
		t.Fatalf("failed %v %%, rejected %v %%: want the limit's rejections in both", p.FailedPct, p.RejectedPct)
	}
	if p.FailedPct > 1 && !IsFailed(p.P99Ms) {
		t.Errorf("%v %% failed calls but p99 = %v ms", p.FailedPct, p.P99Ms)
	}
	if p.FailedPct > 0.1 && !IsFailed(p.P999Ms) {
		t.Errorf("%v %% failed calls but p99.9 = %v ms", p.FailedPct, p.P999Ms)
	}
}
