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
	s.ReportLoad(t0, 0, Load{Queued: 5, Workers: 4})
	s.ReportLoad(t0, 1, Load{Queued: 0, Workers: 4})
	s.ReportLoad(t0, 2, Load{Queued: 3, Workers: 4})
	now := t0.Add(time.Millisecond)
	for range 20 {
		if i := s.Pick(now, []int{1}); i != 2 {
			t.Fatalf("a copy whose call used replica 1 went to %d, want 2 (the shortest fresh queue left)", i)
		}
		s.Done(now, 2, Ignored)
	}
	// Queues relative to workers: 6 of 16 is shorter than 3 of 4.
	s.ReportLoad(now, 0, Load{Queued: 6, Workers: 16})
	if i := s.Pick(now, []int{1}); i != 0 {
		t.Fatalf("copy went to %d, want 0", i)
	}
	s.Done(now, 0, Ignored)
	// Equal queues: the fewer outstanding.
	s.ReportLoad(now, 0, Load{Queued: 0, Workers: 4})
	s.ReportLoad(now, 2, Load{Queued: 0, Workers: 4})
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
	if l, ok := s.Load(now, 0); !ok || l != (Load{Workers: 4}) {
		t.Fatalf("Load(0) = %+v, %v", l, ok)
	}
	if _, ok := s.Load(now, 3); ok {
		t.Fatal("replica 3 never reported")
	}
	// Stale reports: the balancer decides again, spreading copies over 0, 2 and 3.
	late := now.Add(LoadMaxAge)
	if _, ok := s.Load(late, 0); ok {
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
	s.ReportLoad(now, 0, Load{Queued: 1, Workers: 1})
	if n := testing.AllocsPerRun(100, func() { s.ReportLoad(now, 1, Load{Queued: 2, Workers: 3}) }); n != 0 {
		t.Fatalf("ReportLoad allocates %v per call after the first", n)
	}
}

func TestPickFirstAttemptByReport(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(2, Config{Seed: 3}) // P2C: with two replicas both are always the candidates
	if err != nil {
		t.Fatal(err)
	}
	// One attempt out before any report, to replica x; each replica then reports one busy
	// worker, x's being that attempt (it is counted in x's report), y's another client's.
	x := s.Pick(t0, nil)
	y := 1 - x
	s.ReportLoad(t0, x, Load{Busy: 1, Workers: 4})
	s.ReportLoad(t0, y, Load{Busy: 1, Workers: 4})
	now := t0.Add(time.Millisecond)
	// The Set's own count first: y has none outstanding.
	if i := s.Pick(now, nil); i != y {
		t.Fatalf("first attempt went to %d, want %d (fewer outstanding)", i, y)
	}
	// One outstanding on each: y's is beyond its report (2 requests), x's is in it (1).
	if i := s.Pick(now, nil); i != x {
		t.Fatalf("first attempt went to %d, want %d (1 request at the server against 1+1)", i, x)
	}
	s.Done(now, x, Success)
	s.Done(now, x, Success)
	s.Done(now, y, Success)

	// Nothing outstanding: the reports decide, 6 requests at replica 0 against 1 at 1.
	s.ReportLoad(now, 0, Load{Queued: 2, Busy: 4, Workers: 4})
	s.ReportLoad(now, 1, Load{Busy: 1, Workers: 4})
	for k := range 5 {
		if i := s.Pick(now, nil); i != 1 {
			t.Fatalf("first attempt %d went to %d, want 1 (reported 1 request against 6)", k, i)
		}
		s.Done(now, 1, Success)
	}
	// A newer report replaces a replica's; an older one is ignored.
	later := now.Add(time.Millisecond)
	s.ReportLoad(later, 1, Load{Queued: 3, Busy: 4, Workers: 4})
	s.ReportLoad(now, 1, Load{Workers: 4})
	if l, _ := s.Load(later, 1); l != (Load{Queued: 3, Busy: 4, Workers: 4}) {
		t.Fatalf("Load(1) = %+v after an older report, want the newer one", l)
	}
	if i := s.Pick(later, nil); i != 0 {
		t.Fatalf("after replica 1's new report a first attempt went to %d, want 0 (6 against 7)", i)
	}
	s.Done(later, 0, Success)
	// Relative to workers: 9 of 16 is lighter than 7 of 4.
	s.ReportLoad(later, 0, Load{Queued: 0, Busy: 9, Workers: 16})
	if i := s.Pick(later, nil); i != 0 {
		t.Fatalf("first attempt went to %d, want 0 (9 of 16 workers against 7 of 4)", i)
	}
	s.Done(later, 0, Success)
	// Reports RouteMaxAge old no longer route first attempts (replica 1's is still fresh
	// enough for a copy): the candidates are drawn as without reports, and both are picked.
	late := later.Add(RouteMaxAge)
	if _, ok := s.Load(late, 1); !ok {
		t.Fatal("a report RouteMaxAge old no longer counts for copies")
	}
	s.ReportLoad(late, 0, Load{Queued: 9, Busy: 4, Workers: 4}) // only one fresh: not compared
	if seen := firstPicks(s, late, 20); seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("with one report older than RouteMaxAge first attempts went to %v, want both replicas", seen)
	}
}

func TestPickFirstAttemptReportOtherBalancers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(2, Config{Balancer: LeastOutstanding, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s.ReportLoad(t0, 0, Load{Busy: 4, Queued: 8, Workers: 4})
	s.ReportLoad(t0, 1, Load{Workers: 4})
	s.Pick(t0, nil) // one outstanding on one of them
	want := 0
	if s.Outstanding(0) == 1 {
		want = 1
	}
	if i := s.Pick(t0, nil); i != want {
		t.Fatalf("least-outstanding went to %d, want %d: reports do not route its first attempts", i, want)
	}
}

// TestPickFirstAttemptByWait: a replica whose answered request waited four times as long as
// the other candidate's loses a first attempt whatever the counts say (a replica that serves
// four times slower settles with as many requests queued as the others); a smaller ratio, or
// a wait of zero, leaves the counts to decide.
func TestPickFirstAttemptByWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(2, Config{Seed: 3}) // P2C: with two replicas both are always the candidates
	if err != nil {
		t.Fatal(err)
	}
	// Replica 0: 6 requests at 4 workers, its request waited 80 ms; replica 1: 10 requests,
	// 10 ms. The counts say 0, the waits 1.
	s.ReportLoad(now, 0, Load{Queued: 2, Busy: 4, Workers: 4, Wait: 80 * time.Millisecond})
	s.ReportLoad(now, 1, Load{Queued: 6, Busy: 4, Workers: 4, Wait: 10 * time.Millisecond})
	if l, _ := s.Load(now, 0); l.Wait != 80*time.Millisecond {
		t.Fatalf("Load(0) = %+v, want its Wait", l)
	}
	for k := range 3 { // even with more of this Set's attempts outstanding on it
		if i := s.Pick(now, nil); i != 1 {
			t.Fatalf("first attempt %d went to %d, want 1 (waited 10 ms against 80)", k, i)
		}
	}
	for range 3 {
		s.Done(now, 1, Success)
	}
	later := now.Add(time.Millisecond)
	for _, c := range []struct {
		wait0, wait1 time.Duration
		why          string
	}{
		{30 * time.Millisecond, 10 * time.Millisecond, "3× the wait: the counts decide"},
		{80 * time.Millisecond, 0, "replica 1's request waited for none: the counts decide"},
	} {
		s.ReportLoad(later, 0, Load{Queued: 2, Busy: 4, Workers: 4, Wait: c.wait0})
		s.ReportLoad(later, 1, Load{Queued: 6, Busy: 4, Workers: 4, Wait: c.wait1})
		if i := s.Pick(later, nil); i != 0 {
			t.Fatalf("%s: first attempt went to %d, want 0 (6 requests against 10)", c.why, i)
		}
		s.Done(later, 0, Success)
		later = later.Add(time.Millisecond)
	}
	// Reports older than RouteMaxAge route nothing, their waits included.
	late := later.Add(RouteMaxAge)
	s.ReportLoad(later, 0, Load{Queued: 2, Busy: 4, Workers: 4, Wait: 80 * time.Millisecond})
	s.ReportLoad(later, 1, Load{Queued: 6, Busy: 4, Workers: 4, Wait: 10 * time.Millisecond})
	if seen := firstPicks(s, late, 20); seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("with reports RouteMaxAge old first attempts went to %v, want both replicas", seen)
	}
}

// firstPicks makes n first-attempt picks of s at now, each answered at once, and counts
// where they went.
func firstPicks(s *Set, now time.Time, n int) map[int]int {
	seen := map[int]int{}
	for range n {
		i := s.Pick(now, nil)
		seen[i]++
		s.Done(now, i, Success)
	}
	return seen
}

// A replica of more workers than a report's 16 bits hold is compared by its queue per worker,
// as any other: 40,000 queued at 200,000 workers (a fifth of a request each) is shorter than
// 2 at 4. Its workers clamped alone, it read as 40,000 at 65,535 and lost the copy. Load
// returns its figures scaled down together.
func TestPickCopyAtAReplicaOfManyWorkers(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(3, Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	s.ReportLoad(now, 0, Load{Queued: 40000, Busy: 200000, Workers: 200000})
	s.ReportLoad(now, 1, Load{Queued: 2, Busy: 4, Workers: 4})
	if i := s.Pick(now, []int{2}); i != 0 {
		t.Errorf("a copy went to %d, want 0 (0.2 queued per worker, against 0.5)", i)
	}
	if l, ok := s.Load(now, 0); !ok || l != (Load{Queued: 13107, Busy: 65535, Workers: 65535}) {
		t.Errorf("Load(0) = %+v, %v; want 13107 queued, 65535 of 65535 busy", l, ok)
	}
}
