package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// evenOffsets are n due times ms milliseconds apart, the first at 0.
func evenOffsets(n int, gap time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i) * gap
	}
	return out
}

// stallAt returns a launch that stalls the pacer for d before it starts call i: the
// generator's goroutine is held up as by a busy machine.
func stallAt(call int, d time.Duration) func(func()) {
	n := 0
	return func(f func()) {
		if n == call {
			time.Sleep(d)
		}
		n++
		go f()
	}
}

// A call is measured from when it was due, not from when a late generator sent it: the calls
// due during a stall carry the stall in their latency.
func TestPacerMeasuresFromDueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		lat := map[int]time.Duration{}
		start := time.Now()
		p := &pacer{
			offsets:     evenOffsets(8, 10*time.Millisecond),
			maxLag:      time.Second,
			maxInFlight: 100,
			// The stall happens when call 2 (due at 20ms) is launched: the pacer gets back at
			// 55ms, so calls 3, 4 and 5 (due at 30, 40, 50ms) go out late.
			launch: stallAt(2, 35*time.Millisecond),
			send: func(i int, due time.Time) {
				time.Sleep(time.Millisecond) // the server's answer takes 1ms
				mu.Lock()
				lat[i] = time.Since(due)
				mu.Unlock()
			},
		}
		if err := p.run(context.Background(), start); err != nil {
			t.Fatal(err)
		}
		want := map[int]time.Duration{
			0: 1 * time.Millisecond, 1: 1 * time.Millisecond,
			2: 36 * time.Millisecond, // sent after the stall it was launched in
			3: 26 * time.Millisecond, 4: 16 * time.Millisecond, 5: 6 * time.Millisecond,
			6: 1 * time.Millisecond, 7: 1 * time.Millisecond,
		}
		for i, w := range want {
			if lat[i] != w {
				t.Errorf("call %d: latency %v, want %v (from its due time)", i, lat[i], w)
			}
		}
		wantLag := []time.Duration{0, 0, 0, 25 * time.Millisecond, 15 * time.Millisecond, 5 * time.Millisecond, 0, 0}
		for i, w := range wantLag {
			if p.lags[i] != w {
				t.Errorf("call %d: lag %v, want %v", i, p.lags[i], w)
			}
		}
	})
}

// A generator later than the allowed lag stops at the late call, after the calls already sent
// have ended, and says how late it was.
func TestPacerStopsWhenBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []int
		p := &pacer{
			offsets:     evenOffsets(8, 10*time.Millisecond),
			maxLag:      20 * time.Millisecond,
			maxInFlight: 100,
			launch:      stallAt(2, 35*time.Millisecond),
			send: func(i int, due time.Time) {
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				sent = append(sent, i)
				mu.Unlock()
			},
		}
		err := p.run(context.Background(), time.Now())
		var be *BehindError
		if !errors.As(err, &be) || !errors.Is(err, ErrBehind) {
			t.Fatalf("run = %v, want a *BehindError wrapping ErrBehind", err)
		}
		if be.Call != 3 || be.Lag != 25*time.Millisecond || be.Limit != 0 {
			t.Errorf("BehindError = %+v, want call 3, lag 25ms, no in-flight limit", *be)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(sent) != 3 {
			t.Errorf("calls that ended: %v, want 0, 1 and 2 (sent before the stop, waited for)", sent)
		}
	})
}

// A client that holds more calls than it may stops: its latencies would measure itself.
func TestPacerStopsWhenSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pacer{
			offsets:     evenOffsets(10, time.Millisecond),
			maxLag:      time.Second,
			maxInFlight: 3,
			send:        func(int, time.Time) { time.Sleep(time.Second) }, // nothing answers
		}
		err := p.run(context.Background(), time.Now())
		var be *BehindError
		if !errors.As(err, &be) || be.Limit != 3 || be.InFlight != 3 || be.Call != 3 {
			t.Fatalf("run = %v, want a *BehindError at call 3 with 3 in flight (limit 3)", err)
		}
	})
}

// A cancelled run stops sending and returns the context's error.
func TestPacerCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		n := 0
		p := &pacer{
			offsets:     evenOffsets(10, 10*time.Millisecond),
			maxLag:      time.Second,
			maxInFlight: 100,
			launch:      func(f func()) { n++; f() },
			send:        func(int, time.Time) {},
		}
		if err := p.run(ctx, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("run = %v, want DeadlineExceeded", err)
		}
		if n != 3 {
			t.Errorf("%d calls sent before the deadline at 25ms, want 3 (at 0, 10, 20ms)", n)
		}
	})
}

// The sustained-lag rule: a generator late by more than a twentieth of the allowed lag for
// more than 1 % of its calls is behind, even if no call was later than the allowed lag.
func TestCheckLag(t *testing.T) {
	lags := make([]time.Duration, 1000)
	for i := range lags {
		lags[i] = 100 * time.Microsecond
	}
	if err := checkLag(lags, 100*time.Millisecond); err != nil {
		t.Fatalf("steady 100µs lag: %v, want nil", err)
	}
	for i := range 9 { // 0.9 % of the calls 6ms late: a few stalls, counted in their latencies
		lags[i*90] = 6 * time.Millisecond
	}
	if err := checkLag(lags, 100*time.Millisecond); err != nil {
		t.Fatalf("0.9 %% of the calls late: %v, want nil", err)
	}
	for i := range 11 { // 1.1 % of the calls 6ms late: above 100ms/20
		lags[i*90] = 6 * time.Millisecond
	}
	err := checkLag(lags, 100*time.Millisecond)
	var be *BehindError
	if !errors.As(err, &be) || !be.Sustained || be.Lag != 6*time.Millisecond {
		t.Fatalf("checkLag = %v, want a sustained BehindError at 6ms", err)
	}
	if err := checkLag(nil, time.Millisecond); err != nil {
		t.Errorf("no calls: %v", err)
	}
}

// The schedule is a Poisson process: reproducible from its seed, increasing, and at the rate
// asked for.
func TestPoissonOffsets(t *testing.T) {
	a := poissonOffsets(100000, 500, 7)
	b := poissonOffsets(100000, 500, 7)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("offset %d differs between two schedules with the same seed", i)
		}
		if i > 0 && a[i] < a[i-1] {
			t.Fatalf("offset %d goes back in time", i)
		}
	}
	rate := float64(len(a)) / a[len(a)-1].Seconds()
	if math.Abs(rate-500)/500 > 0.02 {
		t.Errorf("rate %.1f calls/s, want 500 ± 2 %%", rate)
	}
	if c := poissonOffsets(10, 500, 8); c[0] == a[0] && c[1] == a[1] {
		t.Error("another seed gives the same schedule")
	}
}

// Normalised, a schedule offers exactly its rate over the measured calls (seed 1's measured
// calls of the default run are 2.5 % denser than nominal as drawn), and keeps its shape.
func TestNormaliseOffersTheNominalRate(t *testing.T) {
	const total, warm, calls, rate = 33450, 2230, 22300, 16 * 0.7 / 0.014111
	drawn := poissonOffsets(total, rate, 1)
	measured := func(o []time.Duration) float64 {
		return float64(calls-warm) / (o[calls-1] - o[warm-1]).Seconds()
	}
	if d := measured(drawn)/rate - 1; math.Abs(d) < 0.01 {
		t.Fatalf("setup: seed 1's measured calls are only %+.2f %% off the rate; the test needs a schedule that is off", 100*d)
	}
	o := slices.Clone(drawn)
	normalise(o, rate, warm, calls)
	if d := measured(o)/rate - 1; math.Abs(d) > 1e-6 {
		t.Errorf("normalised: the measured calls arrive %+.4f %% off the rate", 100*d)
	}
	f := float64(calls-warm) / rate * 1e9 / float64(drawn[calls-1]-drawn[warm-1])
	for _, i := range []int{0, warm, calls - 1, total - 1} {
		if d := math.Abs(float64(o[i]) - f*float64(drawn[i])); d > 2 { // ns of rounding
			t.Fatalf("offset %d scaled by %v, not %v: want one factor for the whole schedule", i, float64(o[i])/float64(drawn[i]), f)
		}
	}
}
