package replica

import (
	"testing"
	"time"
)

// A load report dated far ahead (a clock stepped back after it was received, a bogus
// timestamp) must not stand for the replica's load until the clock catches up with it: it
// was fresh for as long as it was ahead, and every later report was refused as older, so
// copies were routed for an hour by a queue the replica had long since drained. The core's
// own reader of reports (hedge's serverload) already lets the newest time move back and
// counts a report from the future as fresh only within LoadMaxAge.
func TestLoadReportFromTheFutureDoesNotStick(t *testing.T) {
	s := mustNew(t, 2, Config{Seed: 1})
	s.ReportLoad(t0, 1, Load{Workers: 1}) // anchors at t0
	s.ReportLoad(t0.Add(time.Hour), 0, Load{Queued: 500, Workers: 1})
	if l, ok := s.Load(t0, 0); ok {
		t.Errorf("a report dated an hour ahead reads as fresh now: %+v", l)
	}
	s.ReportLoad(t0.Add(time.Millisecond), 0, Load{Queued: 0, Workers: 1})
	if l, ok := s.Load(t0.Add(2*time.Millisecond), 0); !ok || l.Queued != 0 {
		t.Errorf("Load after a report of an empty queue = %+v, %v; want Queued 0, fresh (the report an hour ahead still stands)", l, ok)
	}
}
