package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/sim"
)

// Calibration is what this machine does to a call, measured before the points run: the timer
// slack the servers' sleeps are shortened by, and the round trip of a call on an otherwise idle
// machine (from -concurrency callers in a closed loop). Durations are wire time, in µs.
//
// Nothing of it is subtracted from a real figure: each point's twin carries the point's own
// measured client delay (see clientDelays), which is what a call pays beyond the model while
// that point runs; the round trip here is for information. Nothing is fitted to the
// simulator's figures.
type Calibration struct {
	Protocol string `json:"protocol"`
	// RoundTrip*: latency of a call to a server whose every service time is ServiceUs (the
	// model's median service time, held as the points' servers hold theirs: the sleep
	// shortened by the measured slack), through the same pacer, transport and queue as the
	// points, measured from the call's due time: the generator's lag, the client, the
	// loopback network, the server, the queue, the worker waking from its sleep, and the
	// service time itself.
	RoundTripP50Us float64 `json:"round_trip_p50_us"`
	RoundTripP99Us float64 `json:"round_trip_p99_us"`
	// LagP50Us is the part of the round trip that is the generator's own lateness (how late
	// the pacer sent the calls, at the median).
	LagP50Us float64 `json:"lag_p50_us"`
	// Sleep*: how much longer than asked a worker holds its slot when it sleeps for a service
	// time drawn from the model (timer slack), W sleepers at once.
	SleepP50Us float64 `json:"sleep_p50_us"`
	SleepP99Us float64 `json:"sleep_p99_us"`
	// ServiceUs is the calibration server's service time: the model's median.
	ServiceUs float64 `json:"service_us"`
	// OverheadUs = RoundTripP50Us − ServiceUs: what a call pays beyond its simulated latency
	// when it does not wait in the queue, on an otherwise idle machine. It is not what a
	// point's calls pay (measured on the gRPC 70 % points: 0.69 ms here, and a point's own
	// delay 0.70 ms at the median but 0.83 on average; the generator's lag, the way to the
	// server and the way back move apart when four points run at once), so it is reported,
	// never subtracted.
	OverheadUs float64 `json:"overhead_us"`
}

// calibrate measures the timer slack and the round trip on this machine: n sleeps of
// service times drawn from svc by workers sleepers at once, then n calls at the given rate
// (from callers in a closed loop instead, when callers > 0) to a server whose every service
// time is svc's median, held for that time less the slack.
func calibrate(ctx context.Context, protocol string, workers int, svc sim.Distribution, n int, callRate float64, callers int) (Calibration, error) {
	c := Calibration{Protocol: protocol}
	sl, err := sleepSlack(ctx, svc, workers, n)
	if err != nil {
		return c, fmt.Errorf("calibration: %w", err)
	}
	c.SleepP50Us, c.SleepP99Us = pctUs(sl, 0.50), pctUs(sl, 0.99)
	med := medianOf(svc)
	c.ServiceUs = float64(med) / 1e3
	slack := time.Duration(c.SleepP50Us * 1e3)
	rt, lags, err := roundTrips(ctx, protocol, workers, n, callRate, callers, med, slack)
	if err != nil {
		return c, err
	}
	c.RoundTripP50Us, c.RoundTripP99Us = pctUs(rt, 0.50), pctUs(rt, 0.99)
	c.LagP50Us = pctUs(lags, 0.50)
	c.OverheadUs = max(c.RoundTripP50Us-c.ServiceUs, 0)
	return c, nil
}

// medianOf is the median of 2,001 draws of d (a fixed stream: the same d, the same median).
func medianOf(d sim.Distribution) time.Duration {
	r := rand.New(rand.NewPCG(0x6d6564, 0x69616e))
	xs := make([]time.Duration, 2001)
	for i := range xs {
		xs[i] = max(d.Sample(r), 0)
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// constant is a service time of d, every time.
type constant struct{ d time.Duration }

func (c constant) Sample(*rand.Rand) time.Duration { return c.d }
func (c constant) Mean() time.Duration             { return c.d }
func (c constant) String() string                  { return "constant " + c.d.String() }

// calibrationCallTimeout bounds each calibration call, as callTimeout bounds a point's: a
// loopback server that never answered one held the run until it was interrupted. It is a
// point's bound at -time-scale 1; a calibration call is held for one median service time.
var calibrationCallTimeout = 30 * time.Second

// roundTrips sends n calls, open loop at callRate per second (or from callers in a closed
// loop, when callers > 0), to a server that holds a worker for service (its sleep shortened
// by slack), and returns their latencies from their due times and how late each was sent.
func roundTrips(ctx context.Context, protocol string, workers, n int, callRate float64, callers int, service, slack time.Duration) (lat, lags []time.Duration, err error) {
	acct := newAccounts(n, 0, n, workers)
	rp, err := startReplica(serverConfig{workers: workers, service: constant{service}, slack: slack, reaches: true, protocol: protocol, maxQueue: 1000 * workers}, acct)
	if err != nil {
		return nil, nil, err
	}
	defer rp.close()
	client, err := newLoadClient(protocol, hedge.Config{}, nil, "", []string{rp.addr}, 0)
	if err != nil {
		return nil, nil, err
	}
	defer client.close()
	lat = make([]time.Duration, n)
	failed := make([]bool, n)
	p := &pacer{
		offsets:     poissonOffsets(n, callRate, 42),
		closed:      callers,
		maxLag:      time.Second,
		maxInFlight: 100 * workers,
		send: func(i int, due time.Time) {
			cctx, cancel := context.WithTimeout(ctx, calibrationCallTimeout)
			err := client.call(cctx, i)
			cancel()
			lat[i] = time.Since(due)
			failed[i] = err != nil
		},
	}
	if err := p.run(ctx, time.Now().Add(time.Millisecond)); err != nil {
		return nil, nil, fmt.Errorf("calibration: %w", err)
	}
	if err := ctx.Err(); err != nil {
		// Interrupted after the last call was sent: the calls still in flight failed on the
		// ended context, which says nothing of the server.
		return nil, nil, fmt.Errorf("calibration: %w", err)
	}
	if slices.Contains(failed, true) {
		return nil, nil, fmt.Errorf("calibration: a call to the loopback server failed (or took longer than %v)", calibrationCallTimeout)
	}
	return lat, p.lags, nil
}

// sleepSlack sleeps n service times drawn from svc, on workers goroutines at once, and
// returns how much longer than asked each sleep took. It stops after the sleeps under way
// when ctx is done, and returns ctx's error: with one worker, or long service times, the
// sleeps take minutes (2,000 of the reference model's on one worker, 28 s), and an
// interrupted run waited for every one of them.
func sleepSlack(ctx context.Context, svc sim.Distribution, workers, n int) ([]time.Duration, error) {
	out := make([]time.Duration, n)
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 0x736c61636b))
			for i := w * per; i < min(n, (w+1)*per) && ctx.Err() == nil; i++ {
				d := max(svc.Sample(r), 0)
				t := time.Now()
				time.Sleep(d)
				out[i] = time.Since(t) - d
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// pctUs is the q-quantile of ds (nearest rank), in µs.
func pctUs(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max(0, min(len(s)-1, int(float64(len(s))*q+0.999999)-1))
	return float64(s[i]) / 1e3
}
