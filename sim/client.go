package sim

import (
	"context"
	"errors"
	"time"

	"github.com/hedgekit/hedge"
)

// epoch is virtual time zero as the core sees it: the engine counts int64 nanoseconds and
// hands the core epoch + offset. A fixed date (no monotonic reading) keeps Add and Sub plain
// arithmetic and the runs reproducible.
var epoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

// hedgeClient drives every call with the library's own state machine, a *hedge.Call per call
// slot, reset for each call: it carries out the actions the Call returns and makes no decision
// of its own. One hedgeClient serves one run at a time and is reused across runs.
type hedgeClient struct {
	p     []*hedge.Policy // by client
	s     *sim
	calls []*hedge.Call     // by slot
	rands []func() float64  // by slot: the slot's jitter stream
	route [][]hedge.Route   // by slot, then attempt: where each attempt went (replicas > 1)
	user  func(hedge.Event) // the setup's own Observer, if any
	sup   [256]int64        // suppressed hedges of measured calls, by hedge.Reason
}

func (hc *hedgeClient) reset(p []*hedge.Policy, s *sim, user func(hedge.Event)) {
	hc.p, hc.s, hc.user = p, s, user
	hc.sup = [256]int64{}
}

// observe is the policy's Observer. Events arrive synchronously from inside the Call method
// the engine is running, so the slot of the call in progress says whether the call is measured.
func (hc *hedgeClient) observe(e hedge.Event) {
	if hc.user != nil {
		hc.user(e)
	}
	s := hc.s
	if s.cur < 0 || !s.slots[s.cur].measured {
		return
	}
	switch e.Kind {
	case hedge.HedgeStarted:
		s.hedges++
	case hedge.HedgeWon:
		s.wins++
	case hedge.HedgeSuppressed:
		hc.sup[uint8(e.Reason)]++
	}
	if s.onEvent != nil {
		s.onEvent(s.slots[s.cur].idx, e)
	}
}

func vtime(ns int64) time.Time { return epoch.Add(time.Duration(ns)) }

// apply carries out the Call's actions for the call in slot si.
func (hc *hedgeClient) apply(s *sim, si int32, c *hedge.Call, acts []hedge.Action) {
	for i := range acts {
		a := &acts[i]
		switch a.Kind {
		case hedge.StartAttempt:
			rp := s.startAttempt(si, a.Attempt)
			if s.replicas > 1 && a.Attempt < len(hc.route[si]) {
				// The call's state machine learns where the attempt went, as a transport's
				// picker tells it (hedge.Routed).
				rt := &hc.route[si][a.Attempt]
				rt.To(s.choose[s.slots[si].client].(replicaSet).s, rp)
				c.AttemptRoute(a.Attempt, rt)
			}
		case hedge.CancelAttempt:
			s.cancelAttempt(si, a.Attempt, a.Slow)
		case hedge.ArmTimer:
			s.armTimer(si, int64(a.At.Sub(epoch)))
		case hedge.Finish:
			s.finish(si, c.Err())
		}
	}
}

func (hc *hedgeClient) arrive(s *sim, si int32) {
	for int(si) >= len(hc.calls) {
		hc.calls = append(hc.calls, nil)
		hc.rands = append(hc.rands, nil)
		hc.route = append(hc.route, make([]hedge.Route, maxRouted))
	}
	c := hc.calls[si]
	if c == nil {
		c = new(hedge.Call)
		hc.calls[si] = c
	}
	if hc.rands[si] == nil {
		hc.rands[si] = s.slots[si].rnd.Float64
	}
	opts := hedge.CallOptions{Repeatable: hedge.Repeatable, Rand: hc.rands[si]}
	if s.timeout > 0 {
		// The caller's deadline counts from its arrival, as the engine's does: a call that
		// waited in its client has that much less time.
		opts.Deadline = vtime(s.slots[si].arrive + s.timeout)
	}
	c.Reset(hc.p[s.slots[si].client], opts)
	hc.apply(s, si, c, c.Start(vtime(s.now)))
}

func (hc *hedgeClient) started(s *sim, si int32, k int) {
	c := hc.calls[si]
	hc.apply(s, si, c, c.AttemptStartedService(vtime(s.now), k))
}

func (hc *hedgeClient) done(s *sim, si int32, k int) {
	c := hc.calls[si]
	if s.reports { // the response's load report reaches the policy before its answer
		hc.p[s.slots[si].client].ReportLoad(vtime(s.now), s.reportFrom, s.report)
	}
	hc.apply(s, si, c, c.AttemptDone(vtime(s.now), k, hedge.Outcome{Class: hedge.Success}))
}

func (hc *hedgeClient) load(s *sim, c int32, rp int, l hedge.Load) {
	hc.p[c].ReportLoad(vtime(s.now), rp, l)
}

// maxRouted is how many attempts of a call the client tells the state machine the replica of:
// more than a call makes, resends included, under any setup the simulator runs.
const maxRouted = 16

// errRefused is the error of an attempt whose replica refused the connection.
var errRefused = errors.New("sim: connection refused")

func (hc *hedgeClient) refused(s *sim, si int32, k int) {
	c := hc.calls[si]
	hc.apply(s, si, c, c.AttemptDone(vtime(s.now), k, hedge.Outcome{Class: hedge.Retriable, Err: errRefused, Unsent: true}))
}

func (hc *hedgeClient) deadline(s *sim, si int32) {
	c := hc.calls[si]
	hc.apply(s, si, c, c.Cancel(vtime(s.now), context.DeadlineExceeded))
}

func (hc *hedgeClient) timer(s *sim, si int32) {
	c := hc.calls[si]
	hc.apply(s, si, c, c.TimerFired(vtime(s.now)))
}

// suppressed returns the suppression counts as report.json's "suppressed" object: every
// reason that suppressed at least one hedge of a measured call, by its name.
func (hc *hedgeClient) suppressed() map[string]int64 {
	m := make(map[string]int64)
	for r, n := range hc.sup {
		if n > 0 {
			m[hedge.Reason(r).String()] = n
		}
	}
	return m
}
