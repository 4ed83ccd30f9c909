package main

import (
	"bytes"
	"context"
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
// straggler-only server; its twin is offered the rate the callers reached.
func TestClosedLoopFlags(t *testing.T) {
	c, err := parseArgs([]string{"-concurrency", "64", "-service", "stragglers", "-workers", "256"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.run
	if r.callers != 64 || len(r.loads) != 1 || r.service.Mean() != 2*time.Millisecond || r.calls != defaultClosedCalls {
		t.Errorf("closed loop: callers %d, loads %v, mean service %v, calls %d", r.callers, r.loads, r.service.Mean(), r.calls)
	}
	if c, err := parseArgs([]string{"-concurrency", "64", "-calls", "3000", "-workers", "129"}, &bytes.Buffer{}); err != nil || c.run.calls != 3000 {
		t.Errorf("-concurrency 64 -calls 3000: %d calls, %v", c.run.calls, err)
	}
	if c, err := parseArgs(nil, &bytes.Buffer{}); err != nil || c.run.calls != defaultCalls {
		t.Errorf("open loop: %d calls, %v; want %d", c.run.calls, err, defaultCalls)
	}
	if _, err := parseArgs([]string{"-concurrency", "-1"}, &bytes.Buffer{}); err == nil {
		t.Error("-concurrency -1 accepted")
	}
	// 10,000 calls a second of 2 ms on 256 workers: 7.81 % of their capacity.
	if l := closedLoad(10000, 256, 1, r.service); l != 7.81 {
		t.Errorf("closedLoad = %v %%, want 7.81", l)
	}
}

// TestClosedDelay: a closed loop's twin's answers are late by the point's measured delays,
// each kept where it was measured, its timers by a sixteenth of their median when no timer
// was measured (by the measured lateness when one was), and a cancellation that reaches the
// server by the measured cancellations' mean (their median when none was measured).
func TestClosedDelay(t *testing.T) {
	sends := []time.Duration{5, 15, 25, 35, 45}
	rest := trace{d: []time.Duration{time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond},
		when: []time.Duration{40, 10, 30, 20}}
	d := closedDelay(sends, rest, trace{}, trace{})
	s, ok := d.Answers.(sim.Series)
	if !ok || !slices.Equal(s.Samples, []time.Duration{3 * time.Millisecond, 8 * time.Millisecond, 2 * time.Millisecond, time.Millisecond}) ||
		!slices.Equal(s.At, []time.Duration{10, 20, 30, 40}) || !slices.Equal(s.Arrivals, sends) || d.Sends != nil || d.Every == 0 || d.For != d.Every {
		t.Fatalf("closedDelay = %+v: want every answer late by a draw from the measured delays, in the order measured, no send late", d)
	}
	if d.Timers != 2*time.Millisecond/16 || d.Wakeups != nil || d.Hedges != nil {
		t.Errorf("timers late by %v (%v), hedges by %v: want a sixteenth of the median 2ms, the hedges as the first attempts", d.Timers, d.Wakeups, d.Hedges)
	}
	timers := trace{d: []time.Duration{time.Millisecond}, when: []time.Duration{20}}
	if w, ok := closedDelay(sends, rest, timers, trace{}).Wakeups.(sim.Series); !ok || w.At[0] != 20 || w.Samples[0] != time.Millisecond {
		t.Errorf("timers measured late by 1 ms at 20 ns: twin's %+v", w)
	}
	if tie := tieDelay(sim.Reaches, rest.d, nil); tie != 2*time.Millisecond || tieDelay(sim.Ignored, rest.d, nil) != 0 {
		t.Errorf("cancellation late by %v (ignored: %v), want the median 2ms (none)", tie, tieDelay(sim.Ignored, rest.d, nil))
	}
	cancels := []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 900 * time.Microsecond}
	if tie := tieDelay(sim.Reaches, rest.d, cancels); tie != 400*time.Microsecond || tieDelay(sim.Ignored, rest.d, cancels) != 0 {
		t.Errorf("cancellations measured 0.1, 0.2 and 0.9 ms late: twin's %v (ignored: %v), want their mean 0.4 ms (none)", tie, tieDelay(sim.Ignored, rest.d, cancels))
	}
}
