package hedge_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// TestServerLoadGate drives the state machine with the servers' load reports: a fresh report
// of a long queue suppresses the hedge (the backlog gate, decided by the server), a short one
// lets it start, and a report older than LoadMaxAge counts for nothing.
func TestServerLoadGate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(p *hedge.Policy)
		want   string
		reason hedge.Reason
	}{
		{"no report", func(*hedge.Policy) {}, "start 1 hedge", hedge.ReasonNone},
		{"short queue", func(p *hedge.Policy) { p.ReportLoad(ms(10), 0, hedge.Load{Queued: 6, Busy: 16, Workers: 16}) }, "start 1 hedge", hedge.ReasonNone},
		{"long queue", func(p *hedge.Policy) { p.ReportLoad(ms(10), 0, hedge.Load{Queued: 7, Busy: 16, Workers: 16}) }, "", hedge.ReasonBacklog},
		{"any queue, workers unknown", func(p *hedge.Policy) { p.ReportLoad(ms(10), 0, hedge.Load{Queued: 1}) }, "", hedge.ReasonBacklog},
		{"long queue, stale", func(p *hedge.Policy) {
			p.ReportLoad(ms(20).Add(-hedge.LoadMaxAge), 0, hedge.Load{Queued: 40, Workers: 16})
		}, "start 1 hedge", hedge.ReasonNone},
		{"one replica long, another short", func(p *hedge.Policy) {
			p.ReportLoad(ms(5), 0, hedge.Load{Queued: 10, Busy: 16, Workers: 16})
			p.ReportLoad(ms(6), 3, hedge.Load{Queued: 0, Busy: 2, Workers: 4})
		}, "start 1 hedge", hedge.ReasonNone},
		{"one replica short, the fleet backlogged", func(p *hedge.Policy) {
			p.ReportLoad(ms(5), 0, hedge.Load{Queued: 40, Busy: 16, Workers: 16})
			p.ReportLoad(ms(6), 3, hedge.Load{Queued: 0, Busy: 2, Workers: 4})
		}, "", hedge.ReasonBacklog},
		{"every replica long", func(p *hedge.Policy) {
			p.ReportLoad(ms(5), 0, hedge.Load{Queued: 40, Workers: 16})
			p.ReportLoad(ms(6), 70, hedge.Load{Queued: 1, Workers: 4}) // beyond 64 replicas: a shared slot
		}, "", hedge.ReasonBacklog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got hedge.Reason
			p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget,
				Observer: func(e hedge.Event) {
					if e.Kind == hedge.HedgeSuppressed {
						got = e.Reason
					}
				}})
			c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
			c.Start(ms(0))
			tc.report(p)
			if a := actions(c.TimerFired(ms(20))); a != tc.want || got != tc.reason {
				t.Fatalf("at the threshold: %q, suppressed %v; want %q, %v", a, got, tc.want, tc.reason)
			}
		})
	}
}

// TestServerLoadReplacesInServiceEvidence: AtQuantile waits for evidence that the first
// attempt is in service (another call overtaking it) before it hedges; a fresh report of a
// short queue is that evidence, from the server.
func TestServerLoadReplacesInServiceEvidence(t *testing.T) {
	for _, reported := range []bool{false, true} {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.9), Budget: noBudget})
		now := ms(0)
		for range 50 { // warm the estimator: calls of 1ms, one at a time
			c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
			c.Start(now)
			now = now.Add(time.Millisecond)
			c.AttemptDone(now, 0, hedge.Outcome{Class: hedge.Success})
		}
		th := p.MeasuredAt(now).Threshold
		c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
		c.Start(now)
		if reported {
			p.ReportLoad(now, 0, hedge.Load{Busy: 1, Workers: 8})
		}
		at := now.Add(th)
		started := false
		for _, a := range c.TimerFired(at) {
			started = started || a.Kind == hedge.StartAttempt && a.Hedge
		}
		if started != reported {
			t.Fatalf("reported %v: hedge started at the threshold = %v", reported, started)
		}
	}
}

func TestServerQueue(t *testing.T) {
	p := hedge.MustNew(hedge.Config{})
	if _, _, ok := p.ServerQueue(ms(0)); ok {
		t.Fatal("a report without any")
	}
	p.ReportLoad(ms(0), 1, hedge.Load{Queued: 6, Workers: 4})
	p.ReportLoad(ms(1), 2, hedge.Load{Queued: 8, Workers: 16})
	if q, w, ok := p.ServerQueue(ms(2)); !ok || q != 8 || w != 16 {
		t.Fatalf("ServerQueue = %d, %d, %v; want 8 of 16 (shorter per worker than 6 of 4)", q, w, ok)
	}
	if _, _, ok := p.ServerQueue(ms(1).Add(hedge.LoadMaxAge)); ok {
		t.Fatal("reports LoadMaxAge old still count")
	}
	var zero hedge.Policy
	zero.ReportLoad(ms(0), 0, hedge.Load{Queued: 1}) // does nothing, does not panic
	if _, _, ok := zero.ServerQueue(ms(0)); ok {
		t.Fatal("a zero Policy reports a queue")
	}
	if hedge.LoadMaxAge != replica.LoadMaxAge {
		t.Fatalf("hedge.LoadMaxAge %v != replica.LoadMaxAge %v", hedge.LoadMaxAge, replica.LoadMaxAge)
	}
}

// TestServerLoadGatePassesALostAttempt: while fresh reports say every queue is long, a call
// whose first attempt went to a replica that has answered nothing since it was sent (while
// another replica answered) and whose own report has gone stale is looked at again when it
// counts as lost (4 thresholds after it was sent) and hedged then: a replica that swallows
// requests sends no reports either. The same call on a replica whose report is still fresh
// is answering, however slowly, and its queue is among the reports: it is suppressed with
// reason backlog.
func TestServerLoadGatePassesALostAttempt(t *testing.T) {
	for _, reporting := range []bool{false, true} {
		var got []hedge.Reason
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
			Observer: func(e hedge.Event) {
				if e.Kind == hedge.HedgeSuppressed {
					got = append(got, e.Reason)
				}
			}})
		set, err := replica.New(2, replica.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var route hedge.Route
		c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
		c.Start(ms(0))
		c.AttemptRoute(0, &route)
		route.To(set, 0)
		if reporting {
			p.ReportLoad(ms(1), 0, hedge.Load{Queued: 30, Busy: 4, Workers: 4})
		} else {
			p.ReportLoad(ms(1).Add(-hedge.LoadMaxAge), 0, hedge.Load{Queued: 0, Busy: 1, Workers: 4})
		}
		p.ReportLoad(ms(2), 1, hedge.Load{Queued: 30, Busy: 4, Workers: 4}) // the other replica: a long queue
		set.Report(ms(2), 1, replica.Success)                               // and it answers
		a := actions(c.TimerFired(ms(10)))
		if reporting {
			if a != "" || len(got) != 1 || got[0] != hedge.ReasonBacklog {
				t.Errorf("first replica still reporting: actions %q, suppressions %v; want none, [backlog]", a, got)
			}
			continue
		}
		if a != "timer 40ms" || len(got) != 0 {
			t.Fatalf("first replica silent, its report stale, at the threshold: actions %q, suppressions %v; want \"timer 40ms\", none", a, got)
		}
		p.ReportLoad(ms(39), 1, hedge.Load{Queued: 30, Busy: 4, Workers: 4}) // the reports still say every queue is long
		if a := actions(c.TimerFired(ms(40))); a != "start 1 hedge" || len(got) != 0 {
			t.Errorf("first replica silent for 4 thresholds: actions %q, suppressions %v; want a hedge", a, got)
		}
	}
}

// TestServerLoadGatePassesAStragglerInAPassingBurst: a queue long by the count rule (10 of
// 16 workers) but under one service time refuses a hedge, unless the server had a worker idle
// within spareMaxAge (100 ms; the burst is passing) and the call has run for the reported
// wait plus twice the lowest median latency (its first attempt is in service, a straggler).
func TestServerLoadGatePassesAStragglerInAPassingBurst(t *testing.T) {
	const long = 10 // of 16 workers: long for a copy by the count, under one service time
	for _, tc := range []struct {
		name   string
		idle   time.Duration // how long before the threshold a report had a worker idle; 0 = none
		queued int
		wait   func(th time.Duration) time.Duration
		want   string
	}{
		{"a worker idle 50ms ago, a short wait", 50 * time.Millisecond, long, func(time.Duration) time.Duration { return 5 * time.Millisecond }, "start 1 hedge"},
		{"no worker idle", 0, long, func(time.Duration) time.Duration { return 5 * time.Millisecond }, ""},
		{"a worker idle 150ms ago", 150 * time.Millisecond, long, func(time.Duration) time.Duration { return 5 * time.Millisecond }, ""},
		{"the wait too long for the call to be in service for long", 50 * time.Millisecond, long, func(th time.Duration) time.Duration { return th - 15*time.Millisecond }, ""},
		{"a queue of one service time", 50 * time.Millisecond, 16, func(time.Duration) time.Duration { return 5 * time.Millisecond }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got hedge.Reason
			p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.9), Budget: noBudget,
				Observer: func(e hedge.Event) {
					if e.Kind == hedge.HedgeSuppressed {
						got = e.Reason
					}
				}})
			now := ms(0)
			for i := range 400 { // one call at a time: 10ms, one in five 100ms
				d := 10 * time.Millisecond
				if i%5 == 4 {
					d = 100 * time.Millisecond
				}
				c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
				c.Start(now)
				now = now.Add(d)
				c.AttemptDone(now, 0, hedge.Outcome{Class: hedge.Success})
			}
			th := p.MeasuredAt(now).Threshold
			if th < 40*time.Millisecond {
				t.Fatalf("threshold %v after the warm-up; want one of 40ms or more", th)
			}
			c := p.NewCall(hedge.CallOptions{Repeatable: hedge.Repeatable})
			c.Start(now)
			at := now.Add(th)
			if tc.idle > 0 {
				p.ReportLoad(at.Add(-tc.idle), 0, hedge.Load{Queued: 0, Busy: 12, Workers: 16})
			}
			p.ReportLoad(at.Add(-5*time.Millisecond), 0, hedge.Load{Queued: tc.queued, Busy: 16, Workers: 16, Wait: tc.wait(th)})
			a := actions(c.TimerFired(at))
			if a != tc.want || (a == "") != (got == hedge.ReasonBacklog) {
				t.Fatalf("at the threshold %v: %q, suppressed %v; want %q", th, a, got, tc.want)
			}
		})
	}
}
