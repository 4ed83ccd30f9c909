package sim

import (
	"errors"
	"time"

	"github.com/hedgekit/hedge"
)

// ErrUnfinished is returned by ScriptCall and RunScript when the scripted call was still
// waiting for something when nothing was left to happen (an attempt that never answers and no
// timer to give up on it).
var ErrUnfinished = errors.New("sim: scripted call did not finish")

// Script is one call with scripted attempts, for checking that the simulator's driver and Do
// make the same decisions on the same scenario. The server has infinite workers: an attempt
// starts service the moment it is sent, and nothing queues.
type Script struct {
	// Latencies: attempt k answers Latencies[k] after it is sent. An attempt with no entry, or
	// a negative one, never answers on its own (it runs until it is cancelled).
	Latencies []time.Duration
	// Outcomes: attempt k's outcome. An attempt with no entry succeeds.
	Outcomes []hedge.Outcome
	// ReportService tells the call when each attempt starts service (at once, as the server
	// has a free worker for every attempt, unless Queued says otherwise), as
	// hedge.StartedService does for Do; Tied and StartAware read it.
	ReportService bool
	// Queued: with ReportService, attempt k waits Queued[k] after it is sent before it starts
	// service (a queue at its replica). Its latency still counts from when it was sent.
	Queued []time.Duration
}

// ScriptCall runs one call of p, starting at start, whose attempt k takes latencies[k] to
// succeed (see Script.Latencies), and returns the call's attempt log and its error (nil when an
// attempt won, ErrUnfinished when the call never ended). It drives the same hedge.Call the
// simulator drives, with the same action handling, on a virtual clock.
func ScriptCall(p *hedge.Policy, start time.Time, latencies []time.Duration) (hedge.Log, error) {
	return RunScript(p, start, Script{Latencies: latencies})
}

// RunScript runs the scripted call s of p, starting at start; see ScriptCall.
// It is long because its action handler and its event loop share the call's virtual-clock
// state (the heap, the timer generation, the attempts in flight) as one closure.
func RunScript(p *hedge.Policy, start time.Time, s Script) (hedge.Log, error) {
	const (
		evAnswer = iota
		evFire
		evStart
	)
	var (
		h        eventHeap
		timerGen uint32
		live     []bool // attempt k is in flight (sent, not answered or cancelled)
		finished bool
		now      int64
	)
	at := func(ns int64) time.Time { return start.Add(time.Duration(ns)) }
	c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable, Rand: func() float64 { return 0.5 }})
	var apply func(acts []hedge.Action)
	apply = func(acts []hedge.Action) {
		var startedNow []int
		for _, a := range acts {
			switch a.Kind {
			case hedge.StartAttempt:
				k := a.Attempt
				for len(live) <= k {
					live = append(live, false)
				}
				live[k] = true
				if k < len(s.Latencies) && s.Latencies[k] >= 0 {
					h.push(event{t: now + int64(s.Latencies[k]), idx: int32(k), kind: evAnswer})
				}
				if k < len(s.Queued) && s.Queued[k] > 0 {
					if s.ReportService {
						h.push(event{t: now + int64(s.Queued[k]), idx: int32(k), kind: evStart})
					}
				} else {
					startedNow = append(startedNow, k)
				}
			case hedge.CancelAttempt:
				if a.Attempt < len(live) {
					live[a.Attempt] = false
				}
			case hedge.ArmTimer:
				timerGen++
				h.push(event{t: max(now, int64(a.At.Sub(start))), kind: evFire, gen: timerGen})
			case hedge.Finish:
				finished = true
			}
		}
		if s.ReportService {
			for _, k := range startedNow {
				if live[k] && !finished {
					apply(c.AttemptStartedService(at(now), k))
				}
			}
		}
	}
	apply(c.Start(at(0)))
	for !finished && h.len() > 0 {
		e := h.pop()
		now = e.t
		switch e.kind {
		case evAnswer:
			k := int(e.idx)
			if !live[k] {
				continue
			}
			live[k] = false
			o := hedge.Outcome{Class: hedge.Success}
			if k < len(s.Outcomes) {
				o = s.Outcomes[k]
			}
			apply(c.AttemptDone(at(now), k, o))
		case evFire:
			if e.gen == timerGen {
				apply(c.TimerFired(at(now)))
			}
		case evStart:
			if k := int(e.idx); live[k] {
				apply(c.AttemptStartedService(at(now), k))
			}
		}
	}
	if !finished {
		return c.Log(), ErrUnfinished
	}
	return c.Log(), c.Err()
}
