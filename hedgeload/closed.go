package main

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// The closed-loop mode (-concurrency N): N callers, each sending its next call the moment its
// last one ends, as fast as the client goes. It is what a busy service's handlers do when
// each calls the dependency once per request, and it keeps the client busy: with a server that
// answers at once, the client's own CPU sets the pace. Each call's latency runs from the moment
// its caller sent it; there is no schedule to fall behind. The simulator has no closed loop,
// but against a server with no queue (-workers above twice N: no call waits for a worker,
// hedges included) a call's latency does not depend on when the others were sent, so its twin
// is an open-loop run at the rate the real callers reached.

// stragglersName is the -service value of the straggler-only server.
const stragglersName = "stragglers"

// stragglers is the straggler-only server's service time: at once (under 0.1 ms, less than
// the servers' timer slack, so they do not sleep), except 2 % of requests that stall 100 ms.
// There is nothing to queue for; every slow call is bad luck that a hedge can beat.
func stragglers() sim.Distribution {
	return sim.Mixture{Components: []sim.Component{
		{Weight: 0.98, Dist: sim.Uniform{Max: 100 * time.Microsecond}},
		{Weight: 0.02, Dist: sim.Uniform{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond}},
	}}
}

// closedCalibrationCalls: a closed loop's calibration makes this many times the usual calls,
// since its round trips are the twin's client delay, tail and all.
const closedCalibrationCalls = 10

// closedCalibrationRate is the rate, in calls per second, at which a closed-loop run measures
// the round trip: open-loop, so gentler than the callers (a burst of new connections at a
// higher rate meets the listener's backlog).
const closedCalibrationRate = 1000

// runCallers makes calls 0, 1, … total-1 from n callers in a closed loop, until every call was
// made or ctx is done (then it returns ctx's error once the calls in flight have ended).
func runCallers(ctx context.Context, n, total int, send func(i int, due time.Time)) error {
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= total || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range n {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				send(i, time.Now())
			}
		})
	}
	wg.Wait()
	if next < total {
		return ctx.Err()
	}
	return nil
}

// closedLoad is the load, in % of the servers' capacity without hedges (to 0.01 %), that
// calls arriving at perSecond (wire time) put on workers of the service: the open-loop twin's
// load.
func closedLoad(perSecond float64, workers, replicas int, service sim.Distribution) float64 {
	return math.Round(1e4*perSecond*service.Mean().Seconds()/float64(workers*replicas)) / 100
}

// offsets are the pacer's due times for the point: Poisson arrivals, or (in a closed loop,
// where callers send when they are ready) just the number of calls.
func offsets(pc pointConfig, total int, lambda float64) []time.Duration {
	if pc.concurrency > 0 {
		return make([]time.Duration, total)
	}
	return poissonOffsets(total, lambda, pc.seed)
}

// twinDelay is what a closed loop's client adds to each call, for its simulated twin: the
// closed loop's calibration round trips (wire time: the same callers against a server that
// answers at once) are the client's own delay, busy all the time. Each of the twin's answers
// is late by a draw from them, and its timers by a sixteenth of their median (as a real busy
// client's are; see sim.ClientDelay). Open-loop runs add nothing: their round trip is
// subtracted by the comparison instead.
func twinDelay(callers int, roundTrips []time.Duration) sim.ClientDelay {
	if callers <= 0 || len(roundTrips) == 0 {
		return sim.ClientDelay{}
	}
	s := slices.Clone(roundTrips)
	slices.Sort(s)
	return sim.ClientDelay{Every: time.Hour, For: time.Hour, Timers: s[len(s)/2] / 16, Answers: sim.Empirical{Samples: s}}
}
