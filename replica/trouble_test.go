package replica

import (
	"testing"
	"time"
)

// TestTroubledConcentrated: a replica whose results are mostly bad while the others answer is
// in trouble of its own; the same results spread over every replica are no one's.
func TestTroubledConcentrated(t *testing.T) {
	s := mustNew(t, 4, Config{Seed: 1, ConsecutiveSlow: -1, ConsecutiveFailures: -1})
	now := t0
	for range 20 {
		for i := range 4 {
			s.Report(now, i, Success)
		}
	}
	if s.Troubled(now, 0) {
		t.Fatal("a healthy fleet has trouble")
	}
	s.Report(now, 0, Slow)
	if s.Troubled(now, 0) {
		t.Fatal("one loser makes trouble")
	}
	s.Report(now, 0, Slow)
	s.Report(now, 0, Slow)
	if !s.Troubled(now, 0) || s.Troubled(now, 1) {
		t.Fatalf("three losers in a row on replica 0 while the others answer: troubled %v, replica 1 %v", s.Troubled(now, 0), s.Troubled(now, 1))
	}
	// The others start losing as often: the trouble is spread, no one's own.
	for range 3 {
		for i := 1; i < 4; i++ {
			s.Report(now, i, Slow)
		}
	}
	if s.Troubled(now, 0) {
		t.Fatal("trouble spread over every replica counted as one replica's")
	}
	one := mustNew(t, 1, Config{})
	one.Report(now, 0, Failure)
	if one.Troubled(now, 0) {
		t.Fatal("a Set of one has no other replica to compare with")
	}
}

// TestTroubledOutstanding: a replica holding many more outstanding attempts than the others
// (it has stopped answering, and no result has said so yet) is in trouble of its own.
func TestTroubledOutstanding(t *testing.T) {
	s := mustNew(t, 3, Config{Balancer: RoundRobin, Seed: 1})
	now := t0
	var held []int
	for range 30 {
		i := s.Pick(now, nil)
		if i == 0 {
			held = append(held, i) // replica 0 never answers
			continue
		}
		s.Done(now, i, Success)
	}
	if len(held) < 5 || !s.Troubled(now, 0) || s.Troubled(now, 1) {
		t.Fatalf("replica 0 holds %d attempts, the others none: troubled %v, replica 1 %v", len(held), s.Troubled(now, 0), s.Troubled(now, 1))
	}
	// Every replica as busy: no one's trouble.
	for range 10 {
		s.Pick(now, []int{0, 2})
		s.Pick(now, []int{0, 1})
	}
	if s.Troubled(now, 0) {
		t.Fatal("a replica as busy as the others is troubled")
	}
}

// TestSlowEjectionNeedsOwnTrouble: a run of Slow results ejects a replica whose trouble is
// its own, not one that loses races no more than the others (a loaded fleet), and a Slow
// ejection is short.
func TestSlowEjectionNeedsOwnTrouble(t *testing.T) {
	run := func(s *Set, others bool) {
		now := t0
		for k := range 10 {
			now = now.Add(100 * time.Millisecond)
			s.Report(now, 0, Slow)
			for i := 1; i < s.Len(); i++ {
				if others && k%2 == 0 {
					s.Report(now, i, Slow)
				} else {
					s.Report(now, i, Success)
				}
			}
		}
	}
	own := mustNew(t, 8, Config{Seed: 1})
	run(own, false)
	if own.Ejections() != 1 {
		t.Fatalf("a replica losing every race while the others answer: %d ejections, want 1", own.Ejections())
	}
	loaded := mustNew(t, 8, Config{Seed: 1})
	run(loaded, true)
	if loaded.Ejections() != 0 {
		t.Fatalf("a replica losing races as the loaded others do was ejected %d times", loaded.Ejections())
	}
}

// BenchmarkTroubled: what the state machine pays per question, at a crossing call's gate.
func BenchmarkTroubled(b *testing.B) {
	s := mustNew(b, 8, Config{Seed: 1, ConsecutiveSlow: -1})
	for range 5 {
		s.Report(t0, 3, Slow)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Troubled(t0, 3)
	}
}

// TestSilentSince: a replica that has had no success since a time, while another has, is
// silent since then; a success ends it, and neither a Slow result (a race it lost) nor a
// Failure (perhaps a deadline cutting an attempt it never answered) is an answer. A Set of one has nothing to compare with.
func TestSilentSince(t *testing.T) {
	s := mustNew(t, 3, Config{Seed: 1, ConsecutiveSlow: -1, ConsecutiveFailures: -1})
	sent := t0.Add(10 * time.Millisecond)
	s.Report(t0, 0, Success)
	if s.SilentSince(sent, sent, 0) {
		t.Fatal("silent while no replica has answered since")
	}
	s.Report(sent.Add(time.Millisecond), 1, Success)
	s.Report(sent.Add(2*time.Millisecond), 0, Slow)
	now := sent.Add(5 * time.Millisecond)
	if !s.SilentSince(now, sent, 0) || s.SilentSince(now, sent, 1) {
		t.Fatalf("replica 0 answered nothing since, replica 1 did: silent %v, replica 1 %v", s.SilentSince(now, sent, 0), s.SilentSince(now, sent, 1))
	}
	s.Report(now, 0, Failure)
	if !s.SilentSince(now, sent, 0) {
		t.Fatal("a Failure (perhaps a deadline cutting an attempt) counted as an answer")
	}
	s.Report(now, 0, Success)
	if s.SilentSince(now, sent, 0) {
		t.Fatal("silent after a success")
	}
	one := mustNew(t, 1, Config{})
	one.Report(t0, 0, Success)
	if one.SilentSince(now, sent, 0) {
		t.Fatal("a Set of one is never silent")
	}
}
