package main

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// TestRunCallers: every call is made exactly once, by at most n callers at a time, each
// sending its next call when its last ends; a cancelled run stops sending and says so.
func TestRunCallers(t *testing.T) {
	const n, total = 8, 500
	var inFlight, most atomic.Int64
	var mu sync.Mutex
	seen := make([]int, total)
	send := func(i int, due time.Time) {
		if d := time.Since(due); d < 0 || d > time.Minute {
			t.Errorf("call %d due %v from its send", i, d)
		}
		k := inFlight.Add(1)
		for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		inFlight.Add(-1)
	}
	if made, err := runCallers(context.Background(), n, total, send); err != nil || made != total {
		t.Fatalf("runCallers made %d calls, err %v; want %d, nil", made, err, total)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("call %d made %d times", i, c)
		}
	}
	if m := most.Load(); m > n {
		t.Errorf("%d calls in flight, want at most %d", m, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var made atomic.Int64
	_, err := runCallers(ctx, n, total, func(int, time.Time) {
		if made.Add(1) == 50 {
			cancel()
		}
	})
	if err != context.Canceled || made.Load() >= total {
		t.Errorf("cancelled run: %v after %d calls", err, made.Load())
	}
}

// TestClosedLoopFlags: -concurrency and -service stragglers make a closed loop against the
// straggler-only server; its twin is offered the rate the callers reached, and its client is
// calibrated at a few numbers of callers at once.
func TestClosedLoopFlags(t *testing.T) {
	c, err := parseArgs([]string{"-concurrency", "64", "-service", "stragglers", "-workers", "256"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.run
	if r.callers != 64 || len(r.loads) != 1 || r.service.Mean() != 2049*time.Microsecond {
		t.Errorf("closed loop: callers %d, loads %v, mean service %v", r.callers, r.loads, r.service.Mean())
	}
	if _, err := parseArgs([]string{"-concurrency", "-1"}, &bytes.Buffer{}); err == nil {
		t.Error("-concurrency -1 accepted")
	}
	// 10,000 calls a second of 2.049 ms on 256 workers: 8 % of their capacity.
	if l := closedLoad(10000, 256, 1, r.service); l < 7.9 || l > 8.1 {
		t.Errorf("closedLoad = %v %%, want 8", l)
	}
	if got := callerLevels(64); !slices.Equal(got, []int{64, 48, 32, 24, 16, 8, 4}) {
		t.Errorf("callerLevels(64) = %v", got)
	}
	if got := callerLevels(2); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("callerLevels(2) = %v", got)
	}
}

// TestClosedTwin: the twin's client delay is the calibrated level (or the mixture of the two
// around it) under which the rate the callers reached keeps every caller's call in flight.
func TestClosedTwin(t *testing.T) {
	level := func(k int, d time.Duration) CallerLevel {
		return CallerLevel{Callers: k, delays: []time.Duration{d, d, 2 * d}}
	}
	levels := []CallerLevel{level(64, 4*time.Millisecond), level(16, time.Millisecond), level(32, 2*time.Millisecond)}
	// The twin's mean latency is its mean delay plus 1 ms: at 10,000 calls a second, a delay of
	// 4/3 ms keeps 23.3 calls in flight, 8/3 ms 36.7 and 16/3 ms 63.3.
	simRun := func(d sim.ClientDelay) (sim.Point, error) {
		e, ok := d.Answers.(sim.Empirical)
		if !ok {
			t.Fatalf("a level's delay is %T", d.Answers)
		}
		var sum time.Duration
		for _, s := range e.Samples {
			sum += s
		}
		return sim.Point{MeanMs: 1 + float64(sum)/float64(len(e.Samples))/1e6}, nil
	}
	for _, tc := range []struct {
		callers  int
		want     float64 // the twin's callers
		mixed    bool
		inFlight float64 // what the twin keeps in flight
	}{
		{20, 16, false, 23.33}, // fewer in flight than the lowest level keeps: the lowest
		{30, 24, true, 30},     // halfway between 16 (23.3) and 32 (36.7)
		{64, 64, false, 63.33}, // above the top level's 63.3: the top, short of 64
		{50, 48, true, 50},     // halfway between 32 (36.7) and 64 (63.3)
	} {
		d, k, in, err := closedTwin(tc.callers, 10000, levels, simRun)
		if err != nil {
			t.Fatal(err)
		}
		// 64 callers are more than the top level keeps in flight (63.3): the twin says so.
		if math.Abs(in-tc.inFlight) > 0.01 {
			t.Errorf("%d callers: the twin keeps %.2f in flight, want %.2f", tc.callers, in, tc.inFlight)
		}
		if _, mixed := d.Answers.(sim.Mixture); math.Abs(k-tc.want) > 0.01 || mixed != tc.mixed || d.Every == 0 || d.For != d.Every {
			t.Errorf("%d callers: twin of %.2f callers, %+v; want %.0f (mixture %v)", tc.callers, k, d, tc.want, tc.mixed)
		}
		// A cancellation reaches the server as late as an answer reaches the caller, at the
		// median; where cancellation does not reach it, nothing is late.
		if tie := tieDelay(sim.Reaches, d); tie != 16*d.Timers || tie == 0 || tieDelay(sim.Ignored, d) != 0 {
			t.Errorf("%d callers: cancellation late by %v (ignored: %v), timers by %v", tc.callers, tie, tieDelay(sim.Ignored, d), d.Timers)
		}
	}
}
