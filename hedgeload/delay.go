package main

import (
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
// attempt answered (see above), and where those calls spent their time.
func clientDelays(pc pointConfig, recs []callRecord, warm int, acct *accounts) (lags, rest []time.Duration, s Split) {
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
	}
	s = Split{Calls: len(delay)}
	if len(delay) == 0 {
		return nil, nil, s
	}
	s.LagP50Us, s.LagMeanUs = pctUs(lag, .5), meanUs(lag)
	s.ToServerP50Us, s.ToServerMeanUs = pctUs(to, .5), meanUs(to)
	s.QueueP50Us, s.QueueMeanUs = pctUs(queue, .5), meanUs(queue)
	s.HoldP50Us, s.HoldMeanUs = pctUs(hold, .5), meanUs(hold)
	s.FromServerP50Us, s.FromServerMeanUs = pctUs(from, .5), meanUs(from)
	s.DelayP50Us, s.DelayMeanUs, s.DelayP99Us = pctUs(delay, .5), meanUs(delay), pctUs(delay, .99)
	return lag, rest, s
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
