package replica

import (
	"testing"
	"time"
)

// An ejection ends the runs that caused it: a replica that comes back starts counting its
// failures from zero, instead of being ejected again by its first failure, forever.
func TestEjectionStartsTheRunsAfresh(t *testing.T) {
	for _, r := range []Result{Failure, Unreachable, Slow} {
		t.Run(r.String(), func(t *testing.T) {
			s := mustNew(t, 4, Config{ConsecutiveFailures: 3, ConsecutiveUnreachable: 3, ConsecutiveSlow: 3,
				SlowFor: -1, BaseEjection: time.Second, MaxEjectedPercent: 100})
			for k := range 3 {
				s.Report(t0.Add(time.Duration(k)*time.Millisecond), 0, r)
			}
			if !s.Ejected(t0.Add(3*time.Millisecond), 0) {
				t.Fatalf("setup: three %v results in a row did not eject", r)
			}
			back := t0.Add(2 * time.Second)
			for k := range 2 {
				s.Report(back.Add(time.Duration(k)*time.Millisecond), 0, r)
				if s.Ejected(back.Add(time.Duration(k)*time.Millisecond), 0) {
					t.Fatalf("%d %v results after coming back ejected the replica again; want 3", k+1, r)
				}
			}
			s.Report(back.Add(2*time.Millisecond), 0, r)
			if !s.Ejected(back.Add(2*time.Millisecond), 0) {
				t.Fatalf("three %v results after coming back did not eject", r)
			}
		})
	}
}

// Attempts that were under way when their replica was ejected end with failures too: the
// replica is already out, and they must neither eject it again nor grow its next ejection.
func TestFailuresWhileEjectedAreNotCounted(t *testing.T) {
	s := mustNew(t, 4, Config{ConsecutiveUnreachable: 1, ConsecutiveFailures: 1, BaseEjection: time.Second, MaxEjectedPercent: 100})
	s.Report(t0, 0, Unreachable)
	until := s.Stats(t0, 0).Until
	for k := range 5 {
		now := t0.Add(time.Duration(k+1) * 100 * time.Millisecond)
		s.Report(now, 0, Unreachable)
		s.Report(now, 0, Failure)
	}
	st := s.Stats(t0.Add(600*time.Millisecond), 0)
	if !st.Until.Equal(until) || st.Ejections != 1 || s.Ejections() != 1 {
		t.Fatalf("after failures while ejected: until %v (want %v), ejections %d and %d (want 1)",
			st.Until.Sub(t0), until.Sub(t0), st.Ejections, s.Ejections())
	}
	if s.Ejected(t0.Add(time.Second), 0) {
		t.Fatal("still ejected after its one BaseEjection")
	}
}

// withConfig is the configuration of the Pool.With tests: three replicas, every rule on, at
// most all but one ejected.
var withConfig = Config{ConsecutiveFailures: 5, ConsecutiveUnreachable: 1, ConsecutiveSlow: 5, SlowFor: 500 * time.Millisecond,
	BaseEjection: 30 * time.Second, MaxEjectedPercent: 100, Seed: 3}

// Pool.With keeps ejections where they were in time: the new Set measures time from the old
// one's anchor, or an ejection made late in the old Pool's life would end late in the new's.
func TestPoolWithKeepsTheTimeAnchor(t *testing.T) {
	p, _ := NewPool([]string{"a", "b", "c"}, withConfig)
	p.Set().Ejected(t0, 0) // the old Set's clock starts at t0
	p.Set().Report(t0.Add(10*time.Second), 1, Unreachable)
	q, err := p.With([]string{"b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Set().Ejected(t0.Add(39*time.Second), 0) {
		t.Fatal("b's ejection ended early in the new Pool")
	}
	if q.Set().Ejected(t0.Add(41*time.Second), 0) {
		t.Fatal("b's ejection (30 s from t0+10s) still runs at t0+41s in the new Pool")
	}
}

// Pool.With keeps how many times a replica was ejected: its next ejection lasts longer.
func TestPoolWithKeepsTheEjectionCount(t *testing.T) {
	p, _ := NewPool([]string{"a", "b", "c"}, withConfig)
	p.Set().Report(t0, 1, Unreachable)
	q, _ := p.With([]string{"c", "b"})
	back := t0.Add(31 * time.Second)
	q.Set().Report(back, 1, Unreachable)
	if st := q.Set().Stats(back, 1); st.Ejections != 2 || st.Until.Sub(back) != 60*time.Second {
		t.Fatalf("second ejection after With: %d ejections for %v; want 2 for 60s", st.Ejections, st.Until.Sub(back))
	}
}

// Pool.With keeps a run of failures and what ends it: a success after the change still
// ends the run (the failing flag came over with the count).
func TestPoolWithKeepsTheRunOfFailures(t *testing.T) {
	p, _ := NewPool([]string{"a", "b", "c"}, withConfig)
	for range 4 {
		p.Set().Report(t0, 2, Failure)
	}
	q, _ := p.With([]string{"c", "a"})
	q.Set().Report(t0, 0, Success)
	q.Set().Report(t0, 0, Failure)
	if q.Set().Ejected(t0, 0) {
		t.Fatal("a success after With did not end c's run of four failures: the fifth failure (a run of one) ejected it")
	}
	r, _ := p.With([]string{"c", "a"})
	r.Set().Report(t0, 0, Failure)
	if !r.Set().Ejected(t0, 0) {
		t.Fatal("c lost its run of four failures in With: the fifth did not eject it")
	}
}

// Pool.With keeps a run of Slow results and when it began: latency-induced probation does
// not restart whenever the addresses change, nor does it date the run from the anchor.
func TestPoolWithKeepsTheSlowStreak(t *testing.T) {
	p, _ := NewPool([]string{"a", "b", "c"}, withConfig)
	p.Set().Ejected(t0, 0) // the old Set's clock starts at t0
	start := t0.Add(time.Second)
	for k := range 4 {
		p.Set().Report(start.Add(time.Duration(k)*100*time.Millisecond), 1, Slow)
	}
	q, _ := p.With([]string{"b", "c"})
	q.Set().Report(start.Add(400*time.Millisecond), 0, Slow)
	if q.Set().Ejected(start.Add(400*time.Millisecond), 0) {
		t.Fatal("five Slow results over 400ms ejected b after With; the run must span SlowFor (500ms) from its first")
	}
	q.Set().Report(start.Add(600*time.Millisecond), 0, Slow)
	if !q.Set().Ejected(start.Add(600*time.Millisecond), 0) {
		t.Fatal("b's run of Slow results did not survive With: six over 600ms did not eject it")
	}
}

// A replica ejected in the old Pool is not picked for first attempts in the new one: first
// attempts take a shortcut while no ejection runs, and With must tell the new Set of the
// ejections it carried over.
func TestPoolWithKeepsEjectedReplicasOutOfFirstPicks(t *testing.T) {
	for _, b := range balancers {
		p, _ := NewPool([]string{"a", "b", "c"}, Config{Balancer: b, ConsecutiveUnreachable: 1, MaxEjectedPercent: 100, Seed: 5})
		p.Set().Report(t0, 1, Unreachable)
		q, _ := p.With([]string{"a", "b", "c"})
		for range 50 {
			i := q.Set().Pick(t0, nil)
			q.Set().Done(t0, i, Ignored)
			if i == 1 {
				t.Fatalf("%v: a first attempt went to b, ejected before With", b)
			}
		}
	}
}
