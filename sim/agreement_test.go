package sim_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgetest"
	"github.com/hedgekit/hedge/sim"
)

// TestDriversAgree runs the same scripted calls through the simulator's driver and through
// hedge.Do (in a synctest bubble, where time is virtual too) and checks that they make the
// same decisions: the same attempt logs, the same winners, the same errors.
func TestDriversAgree(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	fail := errors.New("unavailable")
	scenarios := []struct {
		name   string
		cfg    hedge.Config
		script sim.Script
	}{
		{"fast primary, no hedge", hedge.Config{Trigger: hedge.After(ms(20))},
			sim.Script{Latencies: []time.Duration{ms(5)}}},
		{"slow primary, hedge wins", hedge.Config{Trigger: hedge.After(ms(20))},
			sim.Script{Latencies: []time.Duration{ms(100), ms(3)}}},
		{"slow hedge, primary wins", hedge.Config{Trigger: hedge.After(ms(20))},
			sim.Script{Latencies: []time.Duration{ms(30), ms(50)}}},
		{"three attempts, the last wins", hedge.Config{Trigger: hedge.After(ms(10)), Attempts: 3, MaximumConcurrent: 3,
			Budget: budget.Config{Off: true}},
			sim.Script{Latencies: []time.Duration{ms(100), ms(100), ms(2)}}},
		{"fast failure of the hedge does not win", hedge.Config{Trigger: hedge.After(ms(10)), Attempts: 3,
			Budget: budget.Config{Off: true}},
			sim.Script{Latencies: []time.Duration{ms(60), ms(1), ms(5)},
				Outcomes: []hedge.Outcome{{}, {Class: hedge.Retriable, Err: fail}}}},
		{"primary fails, retry after backoff", hedge.Config{Attempts: 2, Backoff: hedge.Backoff{Initial: ms(25), Jitter: -1}},
			sim.Script{Latencies: []time.Duration{ms(2), ms(4)},
				Outcomes: []hedge.Outcome{{Class: hedge.Retriable, Err: fail}}}},
		{"every attempt fails", hedge.Config{Trigger: hedge.After(ms(10)), Budget: budget.Config{Off: true}},
			sim.Script{Latencies: []time.Duration{ms(30), ms(5)},
				Outcomes: []hedge.Outcome{{Class: hedge.Retriable, Err: fail}, {Class: hedge.Retriable, Err: fail}}}},
		{"permanent failure ends the call", hedge.Config{Trigger: hedge.After(ms(10))},
			sim.Script{Latencies: []time.Duration{ms(40), ms(5)},
				Outcomes: []hedge.Outcome{{}, {Class: hedge.Permanent, Err: fail}}}},
		// One call at a time: nothing overtakes the slow primary, so the recommended
		// configuration cannot tell it is in service and does not hedge (Do keeps looking
		// on its timer; the simulator's driver on its event heap).
		{"recommended: a slow primary nothing overtook is not hedged", hedge.Config{Trigger: hedge.AtQuantile(0.95)},
			sim.Script{Latencies: []time.Duration{ms(100), ms(3)}}},
		{"AtQuantile without in-service evidence hedges at the threshold", hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off})},
			sim.Script{Latencies: []time.Duration{ms(100), ms(3)}}},
		{"tied at once: the first to start cancels its copy", hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: budget.Config{Off: true}},
			sim.Script{Latencies: []time.Duration{ms(30), ms(10)}, ReportService: true}},
		{"tied at once, three copies", hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Attempts: 3, MaximumConcurrent: 3, Budget: budget.Config{Off: true}},
			sim.Script{Latencies: []time.Duration{ms(12), ms(4), ms(8)}, ReportService: true}},
		{"tied: a first copy that starts at once is never tied", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(30)}, ReportService: true}},
		{"tied: a copy queued past TieDelay is tied, and the tie that starts cancels it", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(50), ms(8)}, Queued: []time.Duration{ms(20)}, ReportService: true}},
		{"tied: the first copy starts just after its tie, which is cancelled", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(9), ms(8)}, Queued: []time.Duration{ms(2), ms(3)}, ReportService: true}},
		{"tied: a copy in service past the threshold is hedged", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(100), ms(4)}, ReportService: true}},
		{"tied: a tie in service past the threshold is hedged", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(60), ms(80), ms(5)}, Queued: []time.Duration{ms(30)}, ReportService: true}},
		{"tied without start signals: the tie races", hedge.Config{Trigger: hedge.Tied()},
			sim.Script{Latencies: []time.Duration{ms(30), ms(10)}}},
	}
	// warm: how many calls of 5ms, one every 10ms, each reporting its start at once, run on
	// the same policy before the scripted one (AtQuantile, and Tied's hedge of a copy in
	// service, are silent until warm).
	warm := map[string]int{
		"recommended: a slow primary nothing overtook is not hedged":     20,
		"AtQuantile without in-service evidence hedges at the threshold": 20,
		"tied: a copy in service past the threshold is hedged":           20,
		"tied: a tie in service past the threshold is hedged":            20,
	}
	warmScript := sim.Script{Latencies: []time.Duration{ms(5)}, ReportService: true}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sp := hedge.MustNew(sc.cfg)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for range warm[sc.name] {
				if _, err := sim.RunScript(sp, start, warmScript); err != nil {
					t.Fatal(err)
				}
				start = start.Add(ms(10))
			}
			simLog, simErr := sim.RunScript(sp, start, sc.script)
			var doLog hedge.Log
			var doErr error
			synctest.Test(t, func(t *testing.T) {
				p := hedge.MustNew(sc.cfg)
				for range warm[sc.name] {
					hedge.Do(t.Context(), p, scriptedAttempt(warmScript))
					time.Sleep(ms(5))
				}
				_, doErr = hedge.Do(hedge.WithLog(t.Context(), &doLog), p, scriptedAttempt(sc.script))
			})
			if simLog.String() != doLog.String() {
				t.Errorf("the drivers disagree:\n simulator: %s\n Do:        %s", simLog, doLog)
			}
			if (simErr == nil) != (doErr == nil) {
				t.Errorf("errors disagree: simulator %v, Do %v", simErr, doErr)
			}
			t.Log(doLog)
		})
	}
}

// scriptedAttempt plays script s as an attempt function for Do.
func scriptedAttempt(s sim.Script) func(context.Context) (string, error) {
	answers := make([]hedgetest.Answer[string], len(s.Latencies))
	for k, d := range s.Latencies {
		a := hedgetest.Answer[string]{After: d, Value: fmt.Sprint("attempt ", k), Stuck: d < 0}
		switch {
		case s.ReportService && k < len(s.Queued) && s.Queued[k] > 0:
			a.Starts, a.StartAfter = true, s.Queued[k]
		case s.ReportService:
			// The simulator reports starts in attempt order at the instant they are sent;
			// Do's attempts run concurrently, so a nanosecond apiece keeps that order.
			a.Starts, a.StartAfter = true, time.Duration(k)
		}
		if k < len(s.Outcomes) && s.Outcomes[k].Class != hedge.Success {
			a.Value, a.Err = "", s.Outcomes[k].Err
			if s.Outcomes[k].Class == hedge.Permanent {
				a.Err = hedge.MarkPermanent(a.Err)
			}
		}
		answers[k] = a
	}
	return hedgetest.Script(answers...)
}
