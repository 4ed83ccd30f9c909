package hedge_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// A report received before the wall clock stepped back an hour (NTP, a VM
// restore) stays "fresh" for the whole hour: LoadMaxAge is 300ms.
func TestLoadReportAfterClockStepBack(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
	t0 := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	p.ReportLoad(t0, 0, hedge.Load{Queued: 40, Busy: 16, Workers: 16})
	later := t0.Add(-time.Hour).Add(30 * time.Minute) // clock stepped back 1h, then 30 min pass
	q, w, ok := p.ServerQueue(later)
	t.Logf("30 min after the report (wall clock stepped back 1h): ServerQueue = %d, %d, %v", q, w, ok)
	if ok {
		t.Errorf("a report 30 minutes old still counts (LoadMaxAge %v)", hedge.LoadMaxAge)
	}
}
