package main

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
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
// but against a server with no queue (more workers than the N callers can have attempts in
// flight, twice N for most setups, checkClosedLoopRoom: no call waits for a worker,
// hedges included) a call's latency does not depend on when the others were sent, so its twin
// is an open-loop run at the rate the real callers reached, its answers late by the client's
// own delay. That delay is the CPU the callers compete for, and it is measured on the point's
// own calls, as an open loop's is (see clientDelays): each call's latency less its queue wait
// and its drawn service time. The twin's answers are late by draws from it (see closedDelay),
// so nothing is subtracted from the real figures; by Little's law, the twin then keeps N
// calls in flight at the rate reached (Result.TwinInFlight says how many it did). A
// calibration of the delay at a few numbers of callers at once (a client that does not hedge,
// against a server that answers at once), interpolated to the level that keeps N in flight,
// matched the mean but not the shape, and could not stand for a hedging client at all
// (measured, 64 callers, HTTP/1.1 and HTTP/2, load average 3.3): without hedging the points'
// own delay had a median of 0.85–1.7 ms where the nearest calibrated level's was 0.6–1.6 ms,
// off in either direction, and the p50s missed by −17 % to +19 %; with recommended, the
// delay (mean 3.3–3.9 ms, the hedging transport's own work included) exceeded even the
// 64-caller level's (2.4–3.0 ms), and the p50s missed by +12 % to +65 %.
// Closed-loop points run one at a time: each takes the CPU the callers compete for.

// stragglersName is the -service value of the straggler-only server.
const stragglersName = "stragglers"

// stragglers is the straggler-only server's service time: at once (no time at all, so the
// worker does not sleep), except 2 % of requests that stall 100 ms. There is nothing to queue
// for; every slow call is bad luck that a hedge can beat. The quick requests draw nothing
// because a busy machine cannot hold a worker for a few tens of µs: measured (64 callers,
// 128,000 calls, load average 3-5), a quick request drawn from [0, 100 µs], mean 50 µs, held its
// worker 100-205 µs on average, whose sleeps the twin did not have: with cancellation reaching
// the server, the real utilisation came out 10-30 % above the twin's.
func stragglers() sim.Distribution {
	return sim.Mixture{Components: []sim.Component{
		{Weight: 0.98, Dist: sim.Uniform{}},
		{Weight: 0.02, Dist: sim.Uniform{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond}},
	}}
}

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

// closedLoad is the load, in % of the servers' capacity without hedges (to 0.01 %, or to three
// significant figures below 1 %), that calls arriving at perSecond (wire time) put on workers
// of the service: the open-loop twin's load. Rounded to 0.01 % alone, the low loads of a few
// callers on many workers lost their rate (0.0227 % became 0.02, 12 % fewer calls) or all of
// it (0, which the simulator refuses).
func closedLoad(perSecond float64, workers, replicas int, service sim.Distribution) float64 {
	l := 100 * perSecond * service.Mean().Seconds() / float64(workers*replicas)
	if !(l > 0) || math.IsInf(l, 0) {
		return l
	}
	p := math.Pow(10, max(2, 2-math.Floor(math.Log10(l)))) // decimals: at least 2, and 3 figures
	return math.Round(l*p) / p
}

// offsets are the pacer's due times for the point: Poisson arrivals, or (in a closed loop,
// where callers send when they are ready) just the number of calls.
func offsets(pc pointConfig, total int, lambda float64) []time.Duration {
	if pc.concurrency > 0 {
		return make([]time.Duration, total)
	}
	return poissonOffsets(total, lambda, pc.seed)
}

// closedDelay is a closed loop's twin's client delay, each part kept where the point measured
// it (see trace): every answer late by a draw from rest (the point's own measured client
// delays; a closed loop's calls are never sent late), every timer by one from timers (how late
// the point's timers fired) and every hedge's answer by one from hedged (the point's measured
// delays on its hedges that won; see hedgeDelays). sends are when the point's calls were sent,
// by index: the twin's call i happens when the real call i did. A point that measured none of
// a kind falls back: its hedges' answers on rest, its timers late by a sixteenth of rest's
// median (a timer wakes one goroutine where an answer passes through several; see
// sim.ClientDelay).
func closedDelay(sends []time.Duration, rest, timers, hedged trace) sim.ClientDelay {
	d := sim.ClientDelay{Every: time.Hour, For: time.Hour, Timers: time.Duration(pctUs(rest.d, 0.5)*1e3) / 16, Answers: rest.series(sends)}
	if len(timers.d) > 0 {
		d.Wakeups = timers.series(sends)
	}
	if len(hedged.d) > 0 {
		d.Hedges = hedged.series(sends)
	}
	return d
}

// trace is a client delay measured on a closed loop's calls, each where it was measured: d[j]
// from when[j] (ns since the accounts' t0): a first attempt's from its call's send, a hedge's
// from its start, a timer's from when it was due. A busy client's delays come in bursts:
// measured, 64 callers, HTTP/1.1 and HTTP/2, load average 1.5–1.9, the client delays of
// consecutive calls (in the order they were sent) correlate at 0.65–0.82, of calls 20 apart at
// 0.23–0.34, and over 64 consecutive calls their median ranges from 0.5–1.0 ms (p10) to 5.4–6.3
// ms (p99), where 64 independent draws of the same delays keep it within 1.2–2.3 ms. A
// straggler's timer falls due in such a burst, or not, and its hedge is sent and answered in
// it. The twin keeps each delay where it came (sim.Series): its call i arrives when the real
// call i was sent, and each of its events draws from the delays measured nearest the same
// moment of the real run.
type trace struct {
	d, when []time.Duration
}

// series is t as a sim.Series, ordered by when each delay was measured, on the clock on which
// call i arrived at sends[i].
func (t trace) series(sends []time.Duration) sim.Series {
	idx := make([]int, len(t.d))
	for j := range idx {
		idx[j] = j
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(t.when[a], t.when[b]) })
	s := sim.Series{Arrivals: sends, At: make([]time.Duration, len(idx)), Samples: make([]time.Duration, len(idx))}
	for j, k := range idx {
		s.At[j], s.Samples[j] = t.when[k], t.d[k]
	}
	return s
}

// tieDelay is how late a busy client's cancellation reaches the server, for its twin, when
// cancellation reaches it at all. The twin's request reaches its server the moment it is sent
// (the way there is in the delay its answer carries), so its cancelled first attempt holds its
// worker for its call's latency plus the tie delay; the real one holds it from when the request
// arrived until the cancellation did (the client's CPU writes the reset, HTTP/2 and gRPC, or
// closes the connection, HTTP/1.1, and the server notices). So the tie delay is the mean of
// overheld, by how much each of the point's cancelled first attempts outlasted its call on the
// server (the workers' busy time is a sum), and 0 if that is negative. A point that measured
// none falls back on the median of rest (the delays the twin's answers carry): a cancellation
// leaves the client as late as an answer is read. Measured (64 callers, 128,000 calls, load
// average 2.5-2.8), with rest's median, used alone before, the real utilisation with
// cancellation reaching the server was 2.0-7.0 % below its twin's with the same service
// times. An open loop's twin has none.
func tieDelay(mode string, rest, overheld []time.Duration) time.Duration {
	switch {
	case mode != sim.Reaches:
		return 0
	case len(overheld) > 0:
		return max(time.Duration(meanUs(overheld)*1e3), 0)
	case len(rest) > 0:
		return time.Duration(pctUs(rest, 0.5) * 1e3)
	}
	return 0
}

// probeGapMax is the longest gap between one timer probe's firing and the next one's due
// time; each gap is drawn uniformly below it (a probe every 0.5 ms on average, about one per
// ten calls: two thousand goroutine wake-ups a second beside the callers' tens of thousands).
const probeGapMax = time.Millisecond

// timerProbe measures how late this process's timers fire: one timer at a time, each due a
// random gap after the last one fired, so that it samples the process at moments that have
// nothing to do with its load, as a call's hedge timer does. Each firing's lateness counts
// while keep says so.
type timerProbe struct {
	mu    sync.Mutex
	late  []time.Duration
	dues  []time.Duration // when each counted firing was due, ns since t0
	t0    time.Time
	t     *time.Timer
	due   time.Time
	rnd   *rand.Rand
	keep  func() bool
	done  bool
	fired chan struct{} // closed by the last firing, once stopped
}

// startTimerProbe starts a probe whose firings count while keep returns true.
func startTimerProbe(seed uint64, t0 time.Time, keep func() bool) *timerProbe {
	p := &timerProbe{rnd: rand.New(rand.NewPCG(seed, 0x74696d6572)), t0: t0, keep: keep, fired: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	gap := p.gap()
	p.due = time.Now().Add(gap)
	p.t = time.AfterFunc(gap, p.fire)
	return p
}

func (p *timerProbe) gap() time.Duration { return time.Duration(p.rnd.Int64N(int64(probeGapMax))) }

func (p *timerProbe) fire() {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		close(p.fired)
		return
	}
	if p.keep() {
		p.late = append(p.late, max(now.Sub(p.due), 0))
		p.dues = append(p.dues, p.due.Sub(p.t0))
	}
	gap := p.gap()
	p.due = now.Add(gap)
	p.t.Reset(gap)
}

// stop stops the probe and returns the lateness of each firing that counted, and when each was
// due (ns since t0).
func (p *timerProbe) stop() (late, dues []time.Duration) {
	p.mu.Lock()
	p.done = true
	pending := p.t.Stop()
	p.mu.Unlock()
	if !pending {
		<-p.fired // it is firing now: let it see done
	}
	return p.late, p.dues
}
