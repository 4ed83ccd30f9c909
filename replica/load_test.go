package replica

import (
	"testing"
	"time"
)

func TestPickCopyByReportedQueue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(4, Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	s.ReportLoad(t0, 0, 5, 4)
	s.ReportLoad(t0, 1, 0, 4)
	s.ReportLoad(t0, 2, 3, 4)
	s.ReportLoad(t0, 9, 0, 4)  // not a replica: ignored
	s.ReportLoad(t0, -1, 0, 4) // nor this
	now := t0.Add(time.Millisecond)
	for range 20 {
		if i := s.Pick(now, []int{1}); i != 2 {
			t.Fatalf("a copy whose call used replica 1 went to %d, want 2 (the shortest fresh queue left)", i)
		}
		s.Done(now, 2, Ignored)
	}
	// Queues relative to workers: 6 of 16 is shorter than 3 of 4.
	s.ReportLoad(now, 0, 6, 16)
	if i := s.Pick(now, []int{1}); i != 0 {
		t.Fatalf("copy went to %d, want 0", i)
	}
	s.Done(now, 0, Ignored)
	// Equal queues: the fewer outstanding.
	s.ReportLoad(now, 0, 0, 4)
	s.ReportLoad(now, 2, 0, 4)
	s.Pick(now, nil) // may go anywhere
	o0, o2 := s.Outstanding(0), s.Outstanding(2)
	want := 0
	if o2 < o0 {
		want = 2
	}
	if o0 != o2 {
		if i := s.Pick(now, []int{1}); i != want {
			t.Fatalf("tie: copy went to %d, want %d (outstanding %d, %d)", i, want, o0, o2)
		}
	}
	if q, w, ok := s.Load(now, 0); !ok || q != 0 || w != 4 {
		t.Fatalf("Load(0) = %d, %d, %v", q, w, ok)
	}
	if _, _, ok := s.Load(now, 3); ok {
		t.Fatal("replica 3 never reported")
	}
	// Stale reports: the balancer decides again, spreading copies over 0, 2 and 3.
	late := now.Add(LoadMaxAge)
	if _, _, ok := s.Load(late, 0); ok {
		t.Fatal("a report LoadMaxAge old still counts")
	}
	seen := map[int]bool{}
	for range 200 {
		i := s.Pick(late, []int{1})
		seen[i] = true
		s.Done(late, i, Ignored)
	}
	if len(seen) != 3 || seen[1] {
		t.Fatalf("with stale reports copies went to %v, want 0, 2 and 3", seen)
	}
}

func TestReportLoadAllocatesOnce(t *testing.T) {
	s, _ := New(3, Config{})
	now := time.Now()
	s.ReportLoad(now, 0, 1, 1)
	if n := testing.AllocsPerRun(100, func() { s.ReportLoad(now, 1, 2, 3) }); n != 0 {
		t.Fatalf("ReportLoad allocates %v per call after the first", n)
	}
}
