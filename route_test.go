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
		b := p.NewCall(hedge.CallOptions{})
		b.Start(now.Add(time.Millisecond))
		b.AttemptDone(now.Add(2*time.Millisecond), 0, hedge.Outcome{}) // overtakes a: a is in service
		set.Report(now.Add(2*time.Millisecond), 1, replica.Success)    // replica 1 answers
		if !silent {
			set.Report(now.Add(3*time.Millisecond), 0, replica.Success) // replica 0 answers too
		}
		a.TimerFired(now.Add(10 * time.Millisecond)) // at the threshold: in service for 8ms only
		got := actions(a.TimerFired(now.Add(12 * time.Millisecond)))
		if !silent {
			if got != "" || len(s.reasons) != 1 || s.reasons[0] != hedge.ReasonBacklog {
				t.Errorf("replica answering: actions %q, suppressions %v; want none, [backlog]", got, s.reasons)
			}
			continue
		}
		lost := now.Add(40 * time.Millisecond) // 4 thresholds of 10ms after a was sent
		if want := "timer " + lost.Sub(t0).String(); got != want || len(s.reasons) != 0 {
			t.Fatalf("replica silent, at 12ms: actions %q, suppressions %v; want %q, none", got, s.reasons, want)
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
