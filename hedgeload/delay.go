package main

import (
	"cmp"
	"slices"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// The open-loop twin's client delay. A real call pays, beyond the model's queue wait and
// service time, for what lies outside the queue: the generator's lateness in sending it, the
// client and the loopback network on the way to the server, and the server's answer on the
// way back, with the worker's timer slack (its hold less the drawn service time). Each
// point measures this per call, on its own calls, independently of the server's queue: a
// call's latency (from its due time) less the time its first attempt waited in the queue
// (the server's clock, from its arrival to a worker starting it) less the service time the
// server drew for it (times -server-scale: what it meant to hold the worker). The twin
// carries these delays (a call faster than that, its worker woken early, as none), each answer late by a draw from them (sim.ClientDelay.Answers), and
// its figures are compared with the real ones as they are: nothing is subtracted.
//
// It replaces subtracting a median overhead, which was wrong twice over (measured on the gRPC
// points at 30 and 70 %): the overhead measured at calibration, with its generator lag traded
// for the point's, missed that the way to the server and back grew slower (0.19 ms at the
// median with two points at once, 0.31 ms with four) while the lag fell (0.46 ms to 0.37):
// the parts do not move together, and the subtracted overhead fell 0.45 ms short of the
// point's own delay; and the median of a sum of two spread distributions is not the sum of
// their medians (the delays are skewed, p50 0.70–0.80 ms, mean 0.73–0.92), so the model plus
// the delay's median falls 0.06–0.09 ms short of the real p50, where the model plus each
// call's own delay, on the point's own draws, gives it to 5 µs. Replaying the real points'
// send or arrival times instead of the model's Poisson schedule changes the model's mean
// queue wait by 10 µs of 680 and its p50 by less: the arrivals are not burstier than the
// model's, and the twin keeps the schedule.

// Split is where the measured calls answered by their first attempt spent their time, wire
// µs, at the median and on average: the generator's lag (due to sent), the way to the server
// (sent to received), the queue (received to a worker starting it), the worker's hold, the
// way back (the worker done to the call's end), and the client delay the twin carries (the
// latency less the queue wait and the drawn service time: lag, both ways and the hold's
// excess over the drawn time).
type Split struct {
	Calls            int     `json:"calls"`
	LagP50Us         float64 `json:"lag_p50_us"`
	ToServerP50Us    float64 `json:"to_server_p50_us"`
	QueueP50Us       float64 `json:"queue_p50_us"`
	HoldP50Us        float64 `json:"hold_p50_us"`
	FromServerP50Us  float64 `json:"from_server_p50_us"`
	DelayP50Us       float64 `json:"delay_p50_us"`
	LagMeanUs        float64 `json:"lag_mean_us"`
	ToServerMeanUs   float64 `json:"to_server_mean_us"`
	QueueMeanUs      float64 `json:"queue_mean_us"`
	HoldMeanUs       float64 `json:"hold_mean_us"`
	FromServerMeanUs float64 `json:"from_server_mean_us"`
	DelayMeanUs      float64 `json:"delay_mean_us"`
	DelayP99Us       float64 `json:"delay_p99_us"`
}

// clientDelays returns the client delay of each measured call of the point that its first
// attempt answered (see above), in two parts, when it was sent (ns since the accounts' t0),
// and where those calls spent their time.
func clientDelays(pc pointConfig, recs []callRecord, warm int, acct *accounts) (lags, rest, sent []time.Duration, s Split) {
	scale := pc.serverScale
	if scale <= 0 {
		scale = 1
	}
	var lag, to, queue, hold, from, delay []time.Duration
	for i := warm; i < min(pc.calls, len(recs)); i++ {
		r := &recs[i]
		k := i * maxAttempts
		arr, st := time.Duration(acct.arrivedAt[k].Load()), time.Duration(acct.startedAt[k].Load())
		if r.failed || !r.ended || r.winner != 0 || arr == 0 || st < arr {
			continue
		}
		h := time.Duration(acct.served[k].Load())
		drawn := time.Duration(float64(serviceTime(pc.service, pc.seed, i, 0)) * scale)
		lag = append(lag, r.sent-r.due)
		to = append(to, arr-r.sent)
		queue = append(queue, st-arr)
		hold = append(hold, h)
		from = append(from, r.end-st-h)
		delay = append(delay, max(r.lat-(st-arr)-drawn, 0))
		rest = append(rest, max(r.lat-(st-arr)-drawn-(r.sent-r.due), 0))
		sent = append(sent, r.sent)
	}
	s = Split{Calls: len(delay)}
	if len(delay) == 0 {
		return nil, nil, nil, s
	}
	s.LagP50Us, s.LagMeanUs = pctUs(lag, .5), meanUs(lag)
	s.ToServerP50Us, s.ToServerMeanUs = pctUs(to, .5), meanUs(to)
	s.QueueP50Us, s.QueueMeanUs = pctUs(queue, .5), meanUs(queue)
	s.HoldP50Us, s.HoldMeanUs = pctUs(hold, .5), meanUs(hold)
	s.FromServerP50Us, s.FromServerMeanUs = pctUs(from, .5), meanUs(from)
	s.DelayP50Us, s.DelayMeanUs, s.DelayP99Us = pctUs(delay, .5), meanUs(delay), pctUs(delay, .99)
	return lag, rest, sent, s
}

// measuredDelay is an open loop's twin's client delay: every call sent late by a draw from
// lags, every answer late by a draw from rest (empirical distributions of the point's own).
func measuredDelay(lags, rest []time.Duration) sim.ClientDelay {
	return sim.ClientDelay{Every: time.Hour, For: time.Hour, Sends: sim.Empirical{Samples: lags}, Answers: sim.Empirical{Samples: rest}}
}

// meanUs is the mean of ds, in µs (0 for none).
func meanUs(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum float64
	for _, d := range ds {
		sum += float64(d)
	}
	return sum / float64(len(ds)) / 1e3
}

// A hedge's own delays. A straggler's call pays the threshold, the wait until its hedge starts,
// and the client's delay on the hedge. Measured per call on the real client (64 callers,
// HTTP/1.1 and HTTP/2, load average 1.1–4.8): the threshold sat at its floor, 10 ms, in the
// real client and in its twin alike; the hedges started 0.6–1.3 ms after they were due at the
// median on a quiet run, 2.4–4.8 ms on a busy one, most of it the wait for evidence that the
// call is in service (the core looks again until the call has been overtaken for
// MinimumInService plus its own timers' lateness), the rest the timers' own lateness. That
// lateness, measured by a probe (a timer armed at random moments while the measured calls are
// sent, see timerProbe), is 4–9 µs at the median and 0.04–1.7 ms on average: a timer fires on
// time unless it falls due in a burst, when it waits milliseconds. The hedge then goes its own
// way (from the goroutine the timer woke, on a connection of its own) and its answer reaches
// the caller another way than a first attempt's: its client delay, from its start to the call's
// end less its queue wait and its drawn service time, is measured apart (HTTP/2: 0.6–1.3 ms at
// the median, under the first attempts' 1.0–2.0; HTTP/1.1: 1.1–3.3 ms, over their 0.9–1.7). The
// twin's timers fire late by the probe's draws, its hedges' answers by the hedges' own (see
// closedDelay). Before, its timers were late by a sixteenth of the answers' median, 0.1 ms, and
// it hedged the fast calls whose drawn answer delay outlasted the threshold, up to 4.1 % of
// calls where the real client hedged 2.0–2.5 %, and its p99, on the hedged stragglers, fell 1–5
// ms short of the real one.
//
// The core's events carry no call: a hedge is its call's when the hedge's start less its
// offset in the call's log is exactly the start of a first attempt (the core reads one clock
// for both), within the call's send and end.

// hedgeStart is a hedge the client started: when (ns since the accounts' t0, on the core's
// clock), its attempt index, and the threshold it was due after.
type hedgeStart struct {
	at, delay time.Duration
	attempt   int
}

// HedgeSplit is what a point's timers and hedges said of the client, wire µs: how late its
// timers fired (a closed loop's timer probe: Probes firings), how many measured hedged calls
// the core's events matched, their threshold, how late their hedges started (the hedge's
// start less the first attempt's start and the threshold: the timer's lateness, and any wait
// for evidence that the call is in service), and, over the hedges that won, the client's
// delay on them (the call's end less the hedge's start, its queue wait and its drawn service
// time).
type HedgeSplit struct {
	Probes          int     `json:"probes"`
	TimerLateP50Us  float64 `json:"timer_late_p50_us"`
	TimerLateMeanUs float64 `json:"timer_late_mean_us"`
	TimerLateP99Us  float64 `json:"timer_late_p99_us"`
	Calls           int     `json:"calls"`
	ThresholdP50Us  float64 `json:"threshold_p50_us"`
	HedgeLateP50Us  float64 `json:"hedge_late_p50_us"`
	HedgeLateMeanUs float64 `json:"hedge_late_mean_us"`
	Won             int     `json:"won"`
	DelayP50Us      float64 `json:"delay_p50_us"`
	DelayMeanUs     float64 `json:"delay_mean_us"`
	DelayP99Us      float64 `json:"delay_p99_us"`
	Cancels         int     `json:"cancels"`
	CancelP50Us     float64 `json:"cancel_p50_us"`
	CancelMeanUs    float64 `json:"cancel_mean_us"`
}

// hedgeDelays returns the client's delay on each measured call's hedge that won, when that
// hedge started (ns since the accounts' t0), how much longer than its call each cancelled
// first attempt of those calls held its worker ("reaches" mode; see tieDelay), and what the
// measured
// calls' hedges said (see above); firsts are the first attempts' starts and hedges the
// hedges' (see caller).
func hedgeDelays(pc pointConfig, recs []callRecord, warm int, acct *accounts, firsts []time.Duration, hedges []hedgeStart) (hedged, starts, overheld []time.Duration, h HedgeSplit) {
	scale := pc.serverScale
	if scale <= 0 {
		scale = 1
	}
	firsts = slices.Clone(firsts)
	slices.Sort(firsts)
	hedges = slices.Clone(hedges)
	slices.SortFunc(hedges, func(a, b hedgeStart) int { return cmp.Compare(a.at, b.at) })
	var thr, late, stops []time.Duration
	for i := warm; i < min(pc.calls, len(recs)); i++ {
		r := &recs[i]
		if r.hedge < 0 || !r.ended {
			continue
		}
		var e hedgeStart
		n := 0
		from, _ := slices.BinarySearchFunc(hedges, r.sent, func(a hedgeStart, t time.Duration) int { return cmp.Compare(a.at, t) })
		for _, c := range hedges[from:] {
			if c.at > r.end {
				break
			}
			start := c.at - r.hedgeOff
			if _, ok := slices.BinarySearch(firsts, start); ok && c.attempt == int(r.hedge) && start >= r.sent && start <= r.end {
				e, n = c, n+1
			}
		}
		if n != 1 {
			continue // none matched, or more than one: leave the call out
		}
		thr = append(thr, e.delay)
		late = append(late, max(r.hedgeOff-r.firstOff-e.delay, 0))
		k := i*maxAttempts + e.attempt
		if r.failed || int(r.winner) != e.attempt || e.attempt >= maxAttempts {
			continue
		}
		if st0, held := time.Duration(acct.startedAt[i*maxAttempts].Load()), time.Duration(acct.served[i*maxAttempts].Load()); pc.mode == sim.Reaches && st0 > 0 && held > 0 {
			stops = append(stops, st0+held-r.end)
			overheld = append(overheld, held-(r.end-r.sent))
		}
		arr, st := time.Duration(acct.arrivedAt[k].Load()), time.Duration(acct.startedAt[k].Load())
		if arr == 0 || st < arr {
			continue
		}
		drawn := time.Duration(float64(serviceTime(pc.service, pc.seed, i, e.attempt)) * scale)
		hedged = append(hedged, max(r.end-e.at-(st-arr)-drawn, 0))
		starts = append(starts, e.at)
	}
	h = HedgeSplit{Calls: len(late), Won: len(hedged)}
	if len(late) > 0 {
		h.ThresholdP50Us = pctUs(thr, .5)
		h.HedgeLateP50Us, h.HedgeLateMeanUs = pctUs(late, .5), meanUs(late)
	}
	if len(hedged) > 0 {
		h.DelayP50Us, h.DelayMeanUs, h.DelayP99Us = pctUs(hedged, .5), meanUs(hedged), pctUs(hedged, .99)
	}
	if h.Cancels = len(stops); len(stops) > 0 {
		h.CancelP50Us, h.CancelMeanUs = pctUs(stops, .5), meanUs(stops)
	}
	return hedged, starts, overheld, h
}
