package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A Slowdown's or a Failure's From and To are fractions of the run's span. NaN compared false
// with every bound and was accepted, and +Inf converted to the most negative time: a Slowdown
// From +Inf (never) slowed every request from the start (p50 30 ms instead of 10 ms), one To
// +Inf never applied, and one To NaN applied to the end while the load ignored it. They must be
// refused, naming the field's type.
func TestNonFiniteFractionsAreRefused(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, p := range []Params{
		{Slowdowns: []Slowdown{{Replica: -1, From: inf, Factor: 3}}},
		{Slowdowns: []Slowdown{{Replica: -1, From: nan, Factor: 3}}},
		{Slowdowns: []Slowdown{{Replica: -1, To: inf, Factor: 3}}},
		{Slowdowns: []Slowdown{{Replica: -1, To: nan, Factor: 3}}},
		{Replicas: 2, Failures: []Failure{{Replica: 0, Kind: FailRefuse, From: nan, For: time.Second}}},
		{Replicas: 2, Failures: []Failure{{Replica: 0, Kind: FailRefuse, From: inf}}},
	} {
		p.Calls = 100
		_, err := Run(p, Setup{Name: "no hedge"}, 30, Ignored, 1)
		if err == nil || !(strings.Contains(err.Error(), "Slowdown") || strings.Contains(err.Error(), "Failure")) {
			t.Errorf("Slowdowns %+v, Failures %+v: error %v, want one naming the Slowdown or Failure", p.Slowdowns, p.Failures, err)
		}
	}
}

// A Failure whose For is the largest Duration ("for ever", in effect) ended at From + For,
// which wrapped into the past: the replica never failed at all (a blackhole that fails no
// call). It must fail from From to the end, as a Failure of 1000 hours does.
func TestFailureForLongestDurationFails(t *testing.T) {
	run := func(fs ...Failure) Point {
		return mustRun(t, Params{Calls: 4000, Replicas: 2, Timeout: time.Second, Failures: fs}, SetupNoHedge, 30, Ignored, 1)
	}
	long := run(Failure{Replica: 0, Kind: FailBlackhole, From: 0.5, For: 1000 * time.Hour})
	forever := run(Failure{Replica: 0, Kind: FailBlackhole, From: 0.5, For: math.MaxInt64})
	none := run()
	if forever.FailedPct != long.FailedPct || forever.P99Ms != long.P99Ms || forever.Events != long.Events || long.FailedPct == none.FailedPct {
		t.Errorf("blackhole from half-way For %v: failed %v %%, p99 %v ms; For 1000h: failed %v %%, p99 %v ms; no failure: failed %v %%, p99 %v ms",
			time.Duration(math.MaxInt64), forever.FailedPct, forever.P99Ms, long.FailedPct, long.P99Ms, none.FailedPct, none.P99Ms)
	}
}
