package hedge_test

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// TestBacklogGatePassesALostAttempt: while the backlog gate is closed, a call whose first
// attempt went to a replica that has answered nothing since (while another replica has) is
// looked at again lostThresholds (4) thresholds after that attempt was sent, and hedged then if
// its replica is still silent: without a hedge it waits for an answer that may never come. A
// call on a replica that still answers, only slowly, is suppressed with reason backlog: its
// hedge would add load to a backlog.
func TestBacklogGatePassesALostAttempt(t *testing.T) {
	for _, silent := range []bool{true, false} {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
		warm(t, p, t0, 100)
		s.reasons = nil
		// Every call takes 9ms for 1.5s: the recent median rises from 5ms to 9ms, a backlog.
		now := t0
		for range 150 {
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(9*time.Millisecond), 0, hedge.Outcome{})
			now = now.Add(10 * time.Millisecond)
		}
		set, err := replica.New(2, replica.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		set.Report(now.Add(-time.Millisecond), 0, replica.Success) // both answered before a started
		set.Report(now.Add(-time.Millisecond), 1, replica.Success)
		var route hedge.Route
		a := p.NewCall(hedge.CallOptions{})
		a.Start(now)
		a.AttemptRoute(0, &route)
		route.To(set, 0)
		b, rb := p.NewCall(hedge.CallOptions{}), new(hedge.Route)
		b.Start(now.Add(time.Millisecond))
		b.AttemptRoute(0, rb)
		if silent {
			rb.To(set, 1)
		} else {
			rb.To(set, 0) // a later call answered from a's replica: a is in service
		}
		b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{}) // overtakes a
		set.Report(now.Add(2*time.Millisecond), 1, replica.Success)    // replica 1 answers
		if !silent {
			set.Report(now.Add(3*time.Millisecond), 0, replica.Success) // replica 0 answers too
		}
		first := actions(a.TimerFired(now.Add(10 * time.Millisecond))) // at the threshold: in service for 8ms only
		got := actions(a.TimerFired(now.Add(12 * time.Millisecond)))
		if !silent {
			if got != "" || len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonBacklog {
				t.Errorf("replica answering: actions %q, suppressions %v; want none, [backlog]", got, s.reasons)
			}
			continue
		}
		// The timer is armed for the moment a counts as lost, at the threshold (a silent
		// replica answers no later call, so none can show a in service there) or, overtaken
		// elsewhere, at 12ms by the backlog gate.
		lost := now.Add(40 * time.Millisecond) // 4 thresholds of 10ms after a was sent
		if want := "timer " + lost.Sub(t0).String(); (first != want || got != "") && got != want || len(s.reasons) != 0 {
			t.Fatalf("replica silent, at 10 and 12ms: actions %q, %q, suppressions %v; want %q once, none", first, got, s.reasons, want)
		}
		if got := actions(a.TimerFired(lost)); got != "start 1 hedge" || len(s.reasons) != 0 {
			t.Errorf("replica silent for 4 thresholds: actions %q, suppressions %v; want a hedge", got, s.reasons)
		}
	}
}

// TestBacklogGatePassesStartAwareOnATroubledReplica: with start signals, a call whose server
// said it started serving the first attempt on a replica in trouble of its own is hedged past
// the backlog gate (the slow work is under way there); the same call on a healthy replica is
// suppressed with reason backlog.
func TestBacklogGatePassesStartAwareOnATroubledReplica(t *testing.T) {
	for _, troubled := range []bool{true, false} {
		var s suppressions
		p := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95), Observer: s.observe})
		warm(t, p, t0, 100)
		s.reasons = nil
		now := t0
		for range 150 { // a backlog: the median rises from 5ms to 9ms; every call is started at once
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptStartedService(now, 0)
			c.AttemptDone(now.Add(9*time.Millisecond), 0, hedge.Outcome{})
			now = now.Add(10 * time.Millisecond)
		}
		set, err := replica.New(2, replica.Config{Seed: 1, ConsecutiveSlow: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			set.Report(now, 1, replica.Success)
			if troubled {
				set.Report(now, 0, replica.Slow) // replica 0 loses its races, replica 1 answers
			} else {
				set.Report(now, 0, replica.Success)
			}
		}
		if set.Troubled(now, 0) != troubled {
			t.Fatalf("replica 0 troubled %v, want %v", set.Troubled(now, 0), troubled)
		}
		var route hedge.Route
		a := p.NewCall(hedge.CallOptions{})
		a.Start(now)
		a.AttemptRoute(0, &route)
		route.To(set, 0)
		a.AttemptStartedService(now.Add(time.Millisecond), 0)
		set.Report(now.Add(2*time.Millisecond), 0, replica.Success) // replica 0 still answers: not lost
		got := actions(a.TimerFired(now.Add(11 * time.Millisecond)))
		if troubled {
			if got != "start 1 hedge" || len(s.reasons) != 0 {
				t.Errorf("in service on a troubled replica: actions %q, suppressions %v; want a hedge", got, s.reasons)
			}
			continue
		}
		if got != "" || len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonBacklog {
			t.Errorf("in service on a healthy replica: actions %q, suppressions %v; want none, [backlog]", got, s.reasons)
		}
	}
}

// TestStartAwareHedgesALostQueuedAttempt: StartAware never hedges a first attempt its server
// has not said it started, unless that attempt is lost: its replica has answered nothing for 4
// thresholds since it was sent, while another replica answered. No start signal will come.
func TestStartAwareHedgesALostQueuedAttempt(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.StartAware(0.95)})
	warm(t, p, t0, 100)
	now := t0
	for range 10 { // start signals arrive
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		c.AttemptStartedService(now, 0)
		c.AttemptDone(now.Add(5*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	set, err := replica.New(2, replica.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	set.Report(now.Add(-time.Millisecond), 0, replica.Success)
	var route hedge.Route
	a := p.NewCall(hedge.CallOptions{})
	a.Start(now)
	a.AttemptRoute(0, &route)
	route.To(set, 0)
	set.Report(now.Add(2*time.Millisecond), 1, replica.Success) // replica 1 answers, replica 0 does not
	lost := now.Add(40 * time.Millisecond)
	if got, want := actions(a.TimerFired(now.Add(10*time.Millisecond))), "timer "+lost.Sub(t0).String(); got != want {
		t.Fatalf("queued on a silent replica at the threshold: actions %q, want %q", got, want)
	}
	if got := actions(a.TimerFired(lost)); got != "start 1 hedge" {
		t.Errorf("queued on a replica silent for 4 thresholds: actions %q, want a hedge", got)
	}
}

// TestOvertakingCountsOnTheSameReplica: behind several replicas, each with its own queue, a
// call overtaken by a later call answered from another replica may still be queued on its
// own. While the dependency is not quiet (one of the latest answers was slow) and one of the
// two latest answers from the call's own replica was slow, only a later call answered from
// the same replica shows it is in service. While every recent answer is quick, or the call's
// replica answered its latest calls quickly, any later answer still counts.
func TestOvertakingCountsOnTheSameReplica(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slowOn     int // the replica that gave the slow answer; -1: none was slow
		overtaker  int // the replica the overtaking call went to
		wantHedged bool
	}{
		{"a's replica slow, overtaken there", 0, 0, true},
		{"a's replica slow, overtaken elsewhere", 0, 1, false},
		{"another replica slow, overtaken elsewhere", 1, 1, true},
		{"quiet, overtaken elsewhere", -1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s suppressions
			p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Observer: s.observe})
			warm(t, p, t0, 100)
			set, err := replica.New(2, replica.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			now := t0
			if tc.slowOn >= 0 {
				var r hedge.Route
				c := p.NewCall(hedge.CallOptions{})
				c.Start(now)
				c.AttemptRoute(0, &r)
				r.To(set, tc.slowOn)
				c.AttemptDone(now.Add(30*time.Millisecond), 0, hedge.Outcome{}) // six times the median
			}
			now = now.Add(40 * time.Millisecond)
			set.Report(now.Add(-time.Millisecond), 0, replica.Success)
			set.Report(now.Add(-time.Millisecond), 1, replica.Success)
			var ra, rb hedge.Route
			a := p.NewCall(hedge.CallOptions{})
			a.Start(now)
			a.AttemptRoute(0, &ra)
			ra.To(set, 0)
			b := p.NewCall(hedge.CallOptions{})
			b.Start(now.Add(time.Millisecond))
			b.AttemptRoute(0, &rb)
			rb.To(set, tc.overtaker)
			b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{}) // overtakes a
			set.Report(now.Add(2*time.Millisecond), 0, replica.Success)    // both replicas answer
			set.Report(now.Add(2*time.Millisecond), 1, replica.Success)
			a.TimerFired(now.Add(10 * time.Millisecond)) // at the threshold: overtaken 8ms ago
			got := actions(a.TimerFired(now.Add(12 * time.Millisecond)))
			if tc.wantHedged {
				if got != "start 1 hedge" || len(s.reasons) != 0 {
					t.Errorf("actions %q, suppressions %v; want a hedge", got, s.reasons)
				}
				return
			}
			if got != "" {
				t.Errorf("actions %q; want none", got)
			}
			a.AttemptDone(now.Add(20*time.Millisecond), 0, hedge.Outcome{})
			if len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonNoEvidence {
				t.Errorf("suppressions %v; want [no_evidence]", s.reasons)
			}
		})
	}
}
