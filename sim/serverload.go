package sim

import (
	"time"

	"github.com/hedgekit/hedge"
)

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
		s.choose[s.slots[req.slot].client].load(vtime(s.now), rp, s.report.Queued, s.report.Workers)
	}
}
