package sim

import (
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// scheduleReports pushes each client's first out-of-band report (Setup.LoadInterval), at a
// phase of its own within the interval: each client's streams were opened when it connected.
func (s *sim) scheduleReports() {
	if s.reportEvery <= 0 {
		return
	}
	for c := range s.clients {
		ph := int64(mix(s.rptKey+uint64(c)) % uint64(s.reportEvery))
		s.h.push(event{t: ph, kind: evReport, idx: int32(c)})
	}
}

// reportOOB hands client c every replica's load as it stands now, an out-of-band report
// (no request's wait in it), to its replica choice and to its policy, as hedgehttp's load
// streams and hedgegrpc's balancer hand each report on as it arrives. A replica that refuses connections or swallows
// requests (Params.Failures), or is in a stop-the-world pause, sends nothing: its stream is
// as dead as its calls.
func (s *sim) reportOOB(c int32) {
	for rp := range s.replicas {
		if s.failures != nil && s.failingAt(rp, s.now) != failNone || s.pauseEvery > 0 && s.pausedUntil(rp, s.now) > 0 {
			continue
		}
		l := hedge.Load{Queued: s.rlive[rp], Busy: s.workers - len(s.freeW[rp]), Workers: s.workers}
		if s.replicas > 1 {
			s.choose[c].load(vtime(s.now), rp, replica.Load{Queued: l.Queued, Busy: l.Busy, Workers: l.Workers})
		}
		s.cl.load(s, c, rp, l)
	}
}

// loadReport fills s.report with the load report that the response of req, served by worker
// w, carries (Setup.ServerLoad): its replica's queue, its busy workers (req's among them) and
// req's own wait, taken as the response leaves the server, as hedgehttp.Queue takes it when
// the handler writes. The call's client hands it to its replica choice here and to its policy
// when it delivers the answer (hedgeClient.done).
func (s *sim) loadReport(w int32, req *request) {
	rp := int(w) / s.workers
	s.reportFrom = rp
	s.report = hedge.Load{
		Queued:  s.rlive[rp],
		Busy:    s.workers - len(s.freeW[rp]),
		Workers: s.workers,
		Wait:    time.Duration(req.start - req.enq),
	}
	if s.replicas > 1 {
		s.choose[s.slots[req.slot].client].load(vtime(s.now), rp, replica.Load{Queued: s.report.Queued, Busy: s.report.Busy, Workers: s.report.Workers, Wait: s.report.Wait})
	}
}
