package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
	"go.uber.org/goleak"
)

// A server that cannot keep up (one worker, service 2 × 5 ms, offered 95 % of 5 ms) fills the
// client's limit of calls in flight with calls that wait in the server's queue: a collapse,
// not a generator that fell behind, though every call has ended by the time the pacer returns.
func TestOverloadedServerIsACollapse(t *testing.T) {
	sets, err := setups([]string{sim.SetupNoHedge}, 20*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{sim.Reaches, sim.Ignored} {
		t.Run(mode, func(t *testing.T) {
			pc := pointConfig{
				setup: sets[0], loadPct: 95, mode: mode, protocol: HTTP2, seed: 1,
				workers: 1, replicas: 1, service: constant{5 * time.Millisecond}, serverScale: 2,
				calls: 300, warmup: 0.1, maxInFlight: 10,
				maxLag: time.Hour, callTimeout: 10 * time.Second, deadline: 30 * time.Second,
			}
			pt, _, err := runReal(context.Background(), pc)
			if err != nil || !pt.Collapse {
				var be *BehindError
				errors.As(err, &be)
				t.Fatalf("runReal = collapse %v, err %v (BehindError %+v); want a collapse, no error", pt.Collapse, err, be)
			}
		})
	}
}

// A point that ends early (here a collapse) leaves no server working: in "ignored" mode the
// requests its servers still queued were served after the point had returned, each on a
// goroutine of its own, beside the next point's servers.
func TestNoServerWorkAfterThePoint(t *testing.T) {
	sets, err := setups([]string{sim.SetupNoHedge}, 20*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{HTTP2, GRPC} {
		t.Run(protocol, func(t *testing.T) {
			pc := pointConfig{
				setup: sets[0], loadPct: 95, mode: sim.Ignored, protocol: protocol, seed: 1,
				workers: 1, replicas: 1, service: constant{2 * time.Millisecond}, serverScale: 10,
				calls: 300, warmup: 0.1, maxInFlight: 200,
				maxLag: time.Hour, callTimeout: time.Second, deadline: 30 * time.Second,
			}
			pt, _, err := runReal(context.Background(), pc)
			if err != nil || !pt.Collapse {
				t.Fatalf("runReal = collapse %v, err %v; the test wants a point that collapses", pt.Collapse, err)
			}
			if err := goleak.Find(); err != nil {
				t.Errorf("goroutines left after the point returned:\n%.3000s", err)
			}
		})
	}
}

// A closed loop's point has no load to pace it (0), so its deadline comes from its calls, its
// callers and the service time. It came out as a minute of model time whatever the calls:
// the default closed loop (128,000 calls of the reference mixture, 16 callers) needs about
// two.
func TestClosedLoopDeadlineScalesWithCalls(t *testing.T) {
	svc := sim.ReferenceMixture()
	cfg := runConfig{calls: defaultClosedCalls, workers: 16, replicas: 1, callers: 16, timeScale: 1}
	need := time.Duration(float64(cfg.calls) * float64(svc.Mean()) / 16)
	if got := pointDeadline(cfg, 0, svc); got < 2*need {
		t.Errorf("closed loop of %d calls of mean %v from 16 callers: deadline %v, where the calls alone take %v", cfg.calls, svc.Mean(), got, need)
	}
	open := runConfig{calls: 22300, workers: 16, replicas: 1, timeScale: 1}
	need = time.Duration(float64(open.calls) / rate(50, 16, 1, svc) * 1e9)
	if got := pointDeadline(open, 50, svc); got < 2*need || got > 4*need+time.Minute {
		t.Errorf("open loop of %d calls at 50 %%: deadline %v, where sending them takes %v", open.calls, got, need)
	}
}

// -calls is bounded: a point keeps accounts for every call, and a huge count overflowed the
// sizes of its slices (a panic) or asked for more memory than any machine has.
func TestCallsBounded(t *testing.T) {
	for _, n := range []int{maxCalls + 1, math.MaxInt} {
		if _, err := parseArgs([]string{"-calls", strconv.Itoa(n)}, &bytes.Buffer{}); err == nil {
			t.Errorf("-calls %d: no error", n)
		}
	}
	if _, err := parseArgs([]string{"-calls", strconv.Itoa(maxCalls)}, &bytes.Buffer{}); err != nil {
		t.Errorf("-calls %d: %v", maxCalls, err)
	}
}
