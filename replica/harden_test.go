package replica

import (
	"math"
	"testing"
	"time"
)

// eject reports failures on replica i of s until outlier detection ejects it at now.
func eject(t *testing.T, s *Set, now time.Time, i int) {
	t.Helper()
	for range s.Config().ConsecutiveFailures {
		s.Report(now, i, Failure)
	}
	if !s.Ejected(now, i) {
		t.Fatalf("setup: replica %d not ejected", i)
	}
}

// A pool rebuilt onto fewer addresses keeps no more ejections than MaxEjectedPercent allows
// its new size: some replica is always in service, and a pool of one has none ejected.
func TestWithShrinkKeepsOneInService(t *testing.T) {
	p, err := NewPool([]string{"a", "b", "c", "d"}, Config{MaxEjectedPercent: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, p.Set(), t0, 0)
	eject(t, p.Set(), t0.Add(time.Millisecond), 1) // ends later: the one kept
	now := t0.Add(time.Second)
	q, err := p.With([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if h := q.Set().Healthy(now); h != 1 || !q.Set().Ejected(now, 1) {
		t.Fatalf("2 of 4 ejected, rebuilt onto those 2: %d healthy, b ejected %v; want 1, and b (the later end) still out", h, q.Set().Ejected(now, 1))
	}
	if !q.Set().Stats(now, 0).Trial {
		t.Error("the replica whose ejection was ended is not on trial")
	}
	one, err := q.With([]string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	if one.Set().Healthy(now) != 1 {
		t.Fatal("a pool of one kept its only replica ejected")
	}
	i, _ := one.Pick(now, nil)
	if one.Set().Done(now, i, Failure) {
		t.Fatal("a failure of a pool of one was reported as an ejected replica's (kept off the breaker)")
	}
}

// A replica on trial (back from an ejection, not yet answered) stays on trial in a rebuilt
// pool: it takes one attempt at a time, not a full share.
func TestWithKeepsTrial(t *testing.T) {
	addrs := []string{"a", "b", "c", "d", "e"}
	p, err := NewPool(addrs, Config{MaxEjectedPercent: 50, Seed: 1, BaseEjection: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, p.Set(), t0, 0)
	back := t0.Add(2 * time.Second) // the ejection is over
	q, err := p.With(addrs)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Set().Stats(back, 0).Trial {
		t.Fatal("the rebuilt pool lost replica 0's trial")
	}
	n := 0
	for range 100 { // none answered: each stays outstanding
		if q.Set().Pick(back, nil) == 0 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("a replica on trial took %d of 100 attempts outstanding at once, want 1", n)
	}
}

// Every pick counts toward a replica's silence (Set.Troubled): a copy the load reports route
// and a pick of a grouped pool as much as any other.
func TestEveryPickCountsUnanswered(t *testing.T) {
	s := mustNew(t, 3, Config{Seed: 1})
	for i := range 3 {
		s.ReportLoad(t0, i, Load{Queued: 5, Workers: 4})
	}
	s.ReportLoad(t0, 2, Load{Workers: 4})
	for k := range 6 {
		if i := s.Pick(t0, []int{0}); i != 2 {
			t.Fatalf("copy %d went to replica %d, want 2 (the empty queue)", k, i)
		}
	}
	if u := s.reps[2].unanswered.Load(); u != 6 {
		t.Errorf("6 copies routed by the reports: unanswered %d, want 6", u)
	}

	grouped, err := NewGroupedPool([]Group{{Addrs: []string{"a", "b", "c"}}}, Config{Seed: 1, Balancer: Random})
	if err != nil {
		t.Fatal(err)
	}
	gs := grouped.Set()
	picks := 0
	for range 40 { // b and c answer; a swallows its attempts
		i, _ := grouped.Pick(t0, nil)
		if i == 0 {
			picks++
		} else {
			gs.Done(t0, i, Success)
		}
	}
	if u := gs.reps[0].unanswered.Load(); int(u) != picks {
		t.Fatalf("grouped pool: %d picks of a never answered, unanswered %d", picks, u)
	}
	if picks >= silentPicks && !gs.Troubled(t0, 0) {
		t.Errorf("grouped pool: a, silent for %d picks while the others answer, is not Troubled", picks)
	}
}

// NewLayout refuses, with an error and no panic, groups that are all negative and weights
// whose sum a float64 cannot hold.
func TestNewLayoutRejects(t *testing.T) {
	for _, tc := range []struct {
		groups  []int
		weights []float64
	}{
		{[]int{-2}, nil},
		{[]int{0, -1}, nil},
		{[]int{0, 0, 0}, []float64{1e308, 1e308, 1e308}},
	} {
		if _, err := NewLayout(tc.groups, tc.weights); err == nil {
			t.Errorf("NewLayout(%v, %v) accepted it", tc.groups, tc.weights)
		}
	}
}

// An ejection of very long durations (BaseEjection of MaxInt64: "for ever") is one, not an
// overflow that ends it in the past.
func TestEjectionForEver(t *testing.T) {
	var until time.Time
	s := mustNew(t, 4, Config{Seed: 1, MaxEjectedPercent: 50, BaseEjection: math.MaxInt64, MaxEjection: math.MaxInt64,
		OnEjection: func(_ int, _, u time.Time) { until = u }})
	s.Pick(t0, nil) // the anchor
	now := t0.Add(time.Second)
	eject(t, s, now, 0)
	if !s.Ejected(now.Add(100*365*24*time.Hour), 0) || until.Before(now) {
		t.Fatalf("ejected until %v, and not a century on", until)
	}
	if !s.Ejected(now, 0) || timesAtMost(3, math.MaxInt64/2, math.MaxInt64) != math.MaxInt64 {
		t.Fatal("timesAtMost overflowed")
	}
}

// Queues are compared in 64 bits: on a 32-bit platform, a queue of tens of thousands at tens
// of thousands of workers overflows an int (GOARCH=386 runs this test so).
func TestCopyQueuesCompareIn64Bits(t *testing.T) {
	s := mustNew(t, 3, Config{Seed: 1})
	s.ReportLoad(t0, 1, Load{Queued: 30000, Workers: 50000})
	s.ReportLoad(t0, 2, Load{Queued: 50000, Workers: 50000})
	if i := s.Pick(t0, []int{0}); i != 1 {
		t.Fatalf("the copy went to replica %d, want 1, the shorter queue", i)
	}
}
