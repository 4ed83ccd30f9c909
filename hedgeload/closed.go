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
// is an open-loop run at the rate the real callers reached, its answers late by the client's
// own delay. That delay is the CPU the callers compete for: it is calibrated right before each
// point at several numbers of callers at once (a caller waiting on a straggler competes for
// nothing), and the twin takes the level that keeps N calls in flight at the rate reached
// (see closedTwin). Closed-loop points run one at a time, as their calibration did. The twin
// carries the client's delay itself, so nothing is subtracted from the real figures.

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

// closedCalibrationCalls: a closed loop's calibration makes this many times the usual calls
// (split over its levels), since its round trips are the twin's client delay, tail and all.
const closedCalibrationCalls = 10

// closedCalibrationRate is the rate, in calls per second, at which a closed-loop run measures
// the round trip: open-loop, so gentler than the callers (a burst of new connections at a
// higher rate meets the listener's backlog).
const closedCalibrationRate = 1000

// runCallers makes calls 0, 1, … total-1 from n callers in a closed loop, until every call was
// made or ctx is done (then it returns ctx's error once the calls in flight have ended). It
// returns how many calls it made.
func runCallers(ctx context.Context, n, total int, send func(i int, due time.Time)) (int, error) {
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
		return next, ctx.Err()
	}
	return next, nil
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

// callerLevels are the numbers of callers at once a closed loop of n callers is calibrated at,
// largest first: n, and fewer, down to a sixteenth of n. Against stragglers, not every caller
// competes for the CPU: those waiting on a straggler (a seventh of 64 callers without hedges
// at 30,000 calls/s; 45 of them) cost nothing until it answers, so the client is as busy as
// fewer callers would make it.
func callerLevels(n int) []int {
	var out []int
	for _, f := range []float64{1, 0.75, 0.5, 0.375, 0.25, 0.125, 0.0625} {
		k := max(1, int(math.Round(f*float64(n))))
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// levelDelay is what a closed loop's client adds to each call at one calibrated level, for its
// simulated twin: each of the twin's answers is late by a draw from the level's round trips
// (the service time excluded), and its timers by a sixteenth of their median (as a real busy
// client's are; see sim.ClientDelay).
func levelDelay(l CallerLevel) sim.ClientDelay {
	s := slices.Clone(l.delays)
	slices.Sort(s)
	return sim.ClientDelay{Every: time.Hour, For: time.Hour, Timers: s[len(s)/2] / 16, Answers: sim.Empirical{Samples: s}}
}

// closedTwin is a closed loop's simulated twin: the client delay under which an open-loop run
// at the rate the callers reached (perSecond, wire time) keeps callers calls in flight, and
// the (interpolated) number of competing callers it stands for. A closed loop of N callers
// is defined by Little's law: at X calls a second, its calls last N/X on average. Of the
// calibrated levels (levels, any order), the twin takes the one whose delay keeps N in flight
// at X — interpolating between the two levels around N, as a mixture of their delays — which
// is the one unknown of the model (how many callers compete for the CPU at once), solved from
// the two figures that define the closed loop. Nothing is fitted to the percentiles or the
// utilisation it is compared on. simRun runs the twin with a delay and returns its point
// (wire time). inFlight is how many calls the chosen delay keeps in flight at perSecond:
// callers, unless no level brackets them; fewer than callers when even the most contended
// level is faster than the real calls were (the machine was busier during the point than
// during its calibration: the twin cannot stand for it).
func closedTwin(callers int, perSecond float64, levels []CallerLevel, simRun func(sim.ClientDelay) (sim.Point, error)) (d sim.ClientDelay, twinCallers, inFlight float64, err error) {
	ls := slices.Clone(levels)
	slices.SortFunc(ls, func(a, b CallerLevel) int { return a.Callers - b.Callers })
	in := make([]float64, len(ls))
	for i, l := range ls {
		p, err := simRun(levelDelay(l))
		if err != nil {
			return sim.ClientDelay{}, 0, 0, err
		}
		in[i] = perSecond * p.MeanMs / 1e3 // Little: calls in flight = rate × mean latency
		if in[i] < float64(callers) {
			continue
		}
		if i == 0 {
			return levelDelay(l), float64(l.Callers), in[i], nil
		}
		a, b := ls[i-1], l
		f := (float64(callers) - in[i-1]) / (in[i] - in[i-1])
		da, db := levelDelay(a), levelDelay(b)
		return sim.ClientDelay{Every: time.Hour, For: time.Hour,
			Timers:  time.Duration((1-f)*float64(da.Timers) + f*float64(db.Timers)),
			Answers: sim.Mixture{Components: []sim.Component{{Weight: 1 - f, Dist: da.Answers}, {Weight: f, Dist: db.Answers}}},
		}, float64(a.Callers) + f*float64(b.Callers-a.Callers), float64(callers), nil
	}
	top := ls[len(ls)-1]
	return levelDelay(top), float64(top.Callers), in[len(in)-1], nil
}

// tieDelay is how late a busy client's cancellation reaches the server, for its twin, when
// cancellation reaches it at all: the client's CPU writes the reset (HTTP/2, gRPC) or closes the
// connection (HTTP/1.1) as late as it reads an answer, at the median (16 × the timers' delay;
// see levelDelay). An open loop's twin (no client delay) has none.
func tieDelay(mode string, d sim.ClientDelay) time.Duration {
	if mode != sim.Reaches {
		return 0
	}
	return 16 * d.Timers
}
