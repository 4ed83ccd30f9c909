package sim_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
	"github.com/hedgekit/hedge/sim"
)

// TestDriversAgree runs the agreement scenarios (hedgetest.Scenarios) through the simulator's
// driver and checks that it makes the same decisions as every other driver of the state
// machine: the scenario's attempt log and whether the call fails. hedge.Do, hedge.DoInline,
// hedgehttp and hedgegrpc play the same scenarios in their own tests.
func TestDriversAgree(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	warm := hedgetest.WarmAnswers()[0]
	warmScript := sim.Script{Latencies: []time.Duration{warm.After}, ReportService: warm.Starts}
	for _, sc := range hedgetest.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			p := hedge.MustNew(sc.Config)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for range sc.Warm {
				if _, err := sim.RunScript(p, start, warmScript); err != nil {
					t.Fatal(err)
				}
				start = start.Add(ms(10))
			}
			log, err := sim.RunScript(p, start, sim.Script{
				Latencies:     sc.Latencies,
				Outcomes:      sc.Outcomes(),
				ReportService: sc.ReportService,
				Queued:        sc.Queued,
			})
			if got := log.String(); got != sc.Want {
				t.Errorf("log\n got  %s\n want %s", got, sc.Want)
			}
			if (err != nil) != sc.WantErr {
				t.Errorf("err = %v, want an error: %v", err, sc.WantErr)
			}
		})
	}
}
