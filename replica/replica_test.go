package replica

import (
	"errors"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, n int, cfg Config) *Set {
	t.Helper()
	s, err := New(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaults(t *testing.T) {
	c := mustNew(t, 3, Config{}).Config()
	if c.Balancer != P2C || c.ConsecutiveFailures != 5 || c.ConsecutiveUnreachable != 3 ||
		c.BaseEjection != 30*time.Second || c.MaxEjection != 300*time.Second ||
		c.MaxEjectedPercent != 10 || c.Seed == 0 {
		t.Fatalf("defaults = %+v", c)
	}
	if c := mustNew(t, 1, Config{BaseEjection: time.Hour}).Config(); c.MaxEjection != time.Hour {
		t.Fatalf("MaxEjection = %v with a longer BaseEjection; want it raised to BaseEjection", c.MaxEjection)
	}
}

func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		n   int
		cfg Config
	}{
		{0, Config{}},
		{2, Config{Balancer: 9}},
		{2, Config{BaseEjection: -1}},
		{2, Config{MaxEjection: -1}},
		{2, Config{MaxEjectedPercent: 101}},
	} {
		if _, err := New(tc.n, tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%d, %+v) = %v; want ErrInvalidConfig", tc.n, tc.cfg, err)
		}
	}
	if _, err := NewPool(nil, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewPool(nil) = %v; want ErrInvalidConfig", err)
	}
	if _, err := ParseBalancer("fastest"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParseBalancer(fastest) = %v; want ErrInvalidConfig", err)
	}
}

func TestParseBalancer(t *testing.T) {
	for b := P2C; b <= LeastOutstanding; b++ {
		got, err := ParseBalancer(b.String())
		if err != nil || got != b {
			t.Errorf("ParseBalancer(%q) = %v, %v", b.String(), got, err)
		}
	}
}

var balancers = []Balancer{P2C, Random, RoundRobin, LeastOutstanding}

// Every balancer sends an attempt to a replica its call has not used while one is left.
func TestPickAvoidsUsed(t *testing.T) {
	for _, b := range balancers {
		t.Run(b.String(), func(t *testing.T) {
			s := mustNew(t, 4, Config{Balancer: b, Seed: 1})
			for range 100 {
				var used []int
				for range 4 {
					i := s.Pick(t0, used)
					for _, u := range used {
						if u == i {
							t.Fatalf("picked %d again with %v used", i, used)
						}
					}
					used = append(used, i)
				}
				// All used: any replica will do.
				if i := s.Pick(t0, used); i < 0 || i >= 4 {
					t.Fatalf("pick with all used = %d", i)
				}
				for _, u := range append(used, 0) {
					s.Done(t0, u, Ignored)
				}
			}
		})
	}
}

func TestRoundRobinCycles(t *testing.T) {
	s := mustNew(t, 3, Config{Balancer: RoundRobin, Seed: 7})
	first := s.Pick(t0, nil)
	for k := 1; k <= 9; k++ {
		if i := s.Pick(t0, nil); i != (first+k)%3 {
			t.Fatalf("pick %d = %d; want %d", k, i, (first+k)%3)
		}
	}
}

func TestLeastOutstanding(t *testing.T) {
	s := mustNew(t, 3, Config{Balancer: LeastOutstanding, Seed: 3})
	// Three picks spread over the three replicas, then the one freed first gets the next.
	got := map[int]bool{}
	for range 3 {
		got[s.Pick(t0, nil)] = true
	}
	if len(got) != 3 {
		t.Fatalf("three picks went to %v; want all three replicas", got)
	}
	s.Done(t0, 1, Success)
	if i := s.Pick(t0, nil); i != 1 {
		t.Fatalf("pick = %d; want 1, the only one with nothing outstanding", i)
	}
}

func TestP2CPrefersFewerOutstanding(t *testing.T) {
	// With two replicas p2c always compares both.
	s := mustNew(t, 2, Config{Seed: 5})
	for range 10 {
		s.Pick(t0, []int{1}) // load replica 0
	}
	for range 10 {
		if i := s.Pick(t0, nil); i != 1 {
			t.Fatalf("pick = %d; want 1 (0 has %d outstanding, 1 has %d)", i, s.Outstanding(0), s.Outstanding(1))
		}
		s.Done(t0, 1, Success)
	}
	// Among four, the busiest is never picked: it loses every comparison.
	s = mustNew(t, 4, Config{Seed: 5})
	for range 5 {
		s.Pick(t0, []int{0, 1, 2})
	}
	for range 200 {
		i := s.Pick(t0, nil)
		if i == 3 {
			t.Fatal("p2c picked the busiest replica")
		}
		s.Done(t0, i, Success)
	}
}

func TestRandomSpreads(t *testing.T) {
	s := mustNew(t, 4, Config{Balancer: Random, Seed: 11})
	var n [4]int
	for range 4000 {
		i := s.Pick(t0, nil)
		n[i]++
		s.Done(t0, i, Success)
	}
	for i, c := range n {
		if c < 850 || c > 1150 {
			t.Errorf("replica %d picked %d times of 4000; want about 1000", i, c)
		}
	}
}

func TestSeedRepeats(t *testing.T) {
	for _, b := range balancers {
		a, c := mustNew(t, 5, Config{Balancer: b, Seed: 42}), mustNew(t, 5, Config{Balancer: b, Seed: 42})
		for k := range 200 {
			i, j := a.Pick(t0, nil), c.Pick(t0, nil)
			if i != j {
				t.Fatalf("%v: pick %d differs under one seed: %d, %d", b, k, i, j)
			}
			if k%3 == 0 {
				a.Done(t0, i, Success)
				c.Done(t0, j, Success)
			}
		}
	}
}

func TestEjectUnreachable(t *testing.T) {
	s := mustNew(t, 2, Config{Seed: 1})
	now := t0
	s.Report(now, 0, Unreachable)
	s.Report(now, 0, Ignored) // says nothing: the run goes on
	s.Report(now, 0, Unreachable)
	if s.Ejected(now, 0) {
		t.Fatal("ejected after 2 unreachable; want 3")
	}
	s.Report(now, 0, Unreachable)
	if !s.Ejected(now, 0) || s.Healthy(now) != 1 {
		t.Fatal("not ejected after 3 unreachable in a row")
	}
	if st := s.Stats(now, 0); st.Until != now.Add(30*time.Second) || st.Ejections != 1 {
		t.Fatalf("stats = %+v; want ejected until +30s, 1 ejection", st)
	}
	for range 50 {
		if i := s.Pick(now, nil); i != 1 {
			t.Fatal("picked the ejected replica while a healthy one remains")
		}
		s.Done(now, 1, Success)
	}
	// A pick that has used the healthy one prefers it again over the ejected one.
	if i := s.Pick(now, []int{1}); i != 1 {
		t.Fatal("a call that used the healthy replica was sent to the ejected one")
	}
	now = now.Add(30 * time.Second)
	if s.Ejected(now, 0) {
		t.Fatal("still ejected after BaseEjection")
	}
	if s.Ejections() != 1 {
		t.Fatalf("Ejections = %d", s.Ejections())
	}
}

func TestEjectFailuresAndSuccessEndsRun(t *testing.T) {
	s := mustNew(t, 3, Config{Seed: 1})
	for range 4 {
		s.Report(t0, 2, Failure)
	}
	s.Report(t0, 2, Success)
	for range 4 {
		s.Report(t0, 2, Failure)
	}
	if s.Ejected(t0, 2) {
		t.Fatal("ejected although a success broke the run of failures")
	}
	s.Report(t0, 2, Failure)
	if !s.Ejected(t0, 2) {
		t.Fatal("not ejected after 5 failures in a row")
	}
	// Results of an ejected replica are not counted.
	for range 10 {
		s.Report(t0, 2, Failure)
	}
	if st := s.Stats(t0, 2); st.Ejections != 1 || st.Until != t0.Add(30*time.Second) {
		t.Fatalf("stats = %+v; failures while ejected changed the ejection", st)
	}
}

func TestRulesOff(t *testing.T) {
	s := mustNew(t, 2, Config{ConsecutiveFailures: -1, ConsecutiveUnreachable: -1})
	for range 100 {
		s.Report(t0, 0, Failure)
		s.Report(t0, 0, Unreachable)
	}
	if s.Ejected(t0, 0) {
		t.Fatal("ejected with both rules off")
	}
	s = mustNew(t, 2, Config{MaxEjectedPercent: -1})
	for range 100 {
		s.Report(t0, 0, Unreachable)
	}
	if s.Ejected(t0, 0) {
		t.Fatal("ejected with ejection off")
	}
}

// A replica that keeps failing is ejected for longer each time, up to MaxEjection, and is
// forgiven one ejection per BaseEjection it then stays in service.
func TestBackoffGrowsAndDecays(t *testing.T) {
	base := 10 * time.Second
	s := mustNew(t, 2, Config{BaseEjection: base, MaxEjection: 35 * time.Second, ConsecutiveUnreachable: 1})
	now := t0
	for k, want := range []time.Duration{10, 20, 30, 35, 35} {
		s.Report(now, 0, Unreachable)
		st := s.Stats(now, 0)
		if !st.Ejected || st.Until.Sub(now) != want*time.Second {
			t.Fatalf("ejection %d: %+v; want %v", k+1, st, want*time.Second)
		}
		now = st.Until
	}
	// 5 ejections remembered; 3×base in service forgets 3, so the next lasts 3×base.
	now = now.Add(3 * base)
	s.Report(now, 0, Unreachable)
	if st := s.Stats(now, 0); st.Until.Sub(now) != 30*time.Second || st.Ejections != 3 {
		t.Fatalf("after a healthy spell: %+v; want 30s, 3 ejections", st)
	}
}

func TestMaxEjectedBound(t *testing.T) {
	for _, tc := range []struct {
		n, pct, want int
	}{
		{2, 0, 1}, {4, 0, 1}, {10, 0, 1}, {20, 0, 2}, {4, 50, 2}, {4, 100, 3}, {1, 100, 0},
	} {
		s := mustNew(t, tc.n, Config{MaxEjectedPercent: tc.pct, ConsecutiveUnreachable: 1})
		for i := range tc.n {
			s.Report(t0, i, Unreachable)
		}
		if got := tc.n - s.Healthy(t0); got != tc.want {
			t.Errorf("%d replicas, %d%%: %d ejected; want %d", tc.n, tc.pct, got, tc.want)
		}
	}
	// A replica due while the bound is reached is ejected once room appears.
	s := mustNew(t, 2, Config{ConsecutiveUnreachable: 1, BaseEjection: time.Second})
	s.Report(t0, 0, Unreachable)
	s.Report(t0, 1, Unreachable)
	if s.Ejected(t0, 1) {
		t.Fatal("both replicas of two ejected")
	}
	later := t0.Add(time.Second)
	s.Report(later, 1, Unreachable)
	if !s.Ejected(later, 1) {
		t.Fatal("replica 1 not ejected once replica 0 came back")
	}
}

// Ejected replicas are picked only when every replica is ejected (possible after a Pool lost
// its healthy addresses), unused ones first.
// Every replica ejected at once, which MaxEjectedPercent rules out (With too) but concurrent
// ejections racing past the bound could still make: a pick still finds a replica.
func TestAllEjected(t *testing.T) {
	q, _ := NewPool([]string{"a", "b"}, Config{ConsecutiveUnreachable: 1, MaxEjectedPercent: 100})
	q.Set().Report(t0, 0, Unreachable)
	q.Set().reps[1].until.Store(q.Set().reps[0].until.Load()) // the second, past the bound
	if q.Set().Healthy(t0) != 0 {
		t.Fatal("setup: want every replica ejected")
	}
	for range 20 {
		i := q.Set().Pick(t0, []int{0})
		if i != 1 {
			t.Fatalf("pick = %d; want 1, the ejected one not yet used", i)
		}
		q.Set().Done(t0, i, Ignored)
	}
}

func TestZeroTime(t *testing.T) {
	s := mustNew(t, 2, Config{ConsecutiveUnreachable: 1})
	var zero time.Time
	s.Report(zero, 0, Unreachable)
	if !s.Ejected(zero, 0) || s.Ejected(zero.Add(30*time.Second), 0) {
		t.Fatal("ejection wrong on a clock starting at the zero time")
	}
}

func TestPickAllocatesNothing(t *testing.T) {
	for _, b := range balancers {
		s := mustNew(t, 8, Config{Balancer: b})
		used := []int{1, 2}
		if n := testing.AllocsPerRun(100, func() {
			i := s.Pick(t0, used)
			s.Done(t0, i, Success)
		}); n != 0 {
			t.Errorf("%v: %v allocations per pick", b, n)
		}
	}
}

func TestConcurrent(t *testing.T) {
	for _, b := range balancers {
		s := mustNew(t, 4, Config{Balancer: b, ConsecutiveFailures: 2})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				now := t0
				for k := range 500 {
					now = now.Add(time.Millisecond)
					i := s.Pick(now, nil)
					j := s.Pick(now, []int{i})
					r := Success
					if (k+g)%7 == 0 {
						r = Failure
					}
					s.Done(now, i, r)
					s.Done(now, j, Ignored)
					s.Stats(now, i)
				}
			})
		}
		wg.Wait()
		for i := range 4 {
			if o := s.Outstanding(i); o != 0 {
				t.Errorf("%v: replica %d has %d outstanding after every pick was done", b, i, o)
			}
		}
	}
}

func TestPoolWithKeepsHealth(t *testing.T) {
	p, err := NewPool([]string{"a:1", "b:1", "c:1"}, Config{ConsecutiveUnreachable: 1, MaxEjectedPercent: 100, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.Set().Report(t0, 1, Unreachable) // b ejected
	p.Set().Report(t0, 2, Failure)     // c on a run of 1
	q, err := p.With([]string{"c:1", "b:1", "d:1"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Index("b:1") != 1 || !q.Set().Ejected(t0, 1) {
		t.Fatal("b lost its ejection")
	}
	for range 4 {
		q.Set().Report(t0, 0, Failure)
	}
	if !q.Set().Ejected(t0, 0) {
		t.Fatal("c lost its run of failures (it had one: four more make five)")
	}
	if q.Index("a:1") != -1 || q.Addr(2) != "d:1" || q.Len() != 3 {
		t.Fatal("addresses wrong")
	}
	addrs := []string{"x", "y"}
	r, _ := NewPool(addrs, Config{})
	if !r.Same(addrs) || !r.Same([]string{"x", "y"}) || r.Same([]string{"y", "x"}) || r.Same(addrs[:1]) {
		t.Fatal("Same wrong")
	}
	if i, a := r.Pick(t0, []int{0}); i != 1 || a != "y" {
		t.Fatalf("Pick = %d, %q", i, a)
	}
}

// The shortcut for first attempts with nothing ejected chooses what the general path would:
// under one seed, a Set picking first attempts and one forced onto the general path (its used
// list names no replica of the Set, so it excludes nothing) pick alike.
func TestFirstPickShortcutAgrees(t *testing.T) {
	for _, b := range balancers {
		if b == LeastOutstanding {
			continue // ties are broken from a random start either way: compared below by outcome
		}
		fast := mustNew(t, 5, Config{Balancer: b, Seed: 9})
		slow := mustNew(t, 5, Config{Balancer: b, Seed: 9})
		for k := range 300 {
			// used holds a replica that does not exist in the Set: it forces the general
			// path without excluding anything.
			i, j := fast.Pick(t0, nil), slow.Pick(t0, []int{99})
			if i != j {
				t.Fatalf("%v: pick %d: shortcut %d, general path %d", b, k, i, j)
			}
			if k%2 == 0 {
				fast.Done(t0, i, Success)
				slow.Done(t0, j, Success)
			}
		}
	}
}

func TestOnEjection(t *testing.T) {
	type ej struct {
		i          int
		now, until time.Time
	}
	var got []ej
	var s *Set
	s = mustNew(t, 3, Config{ConsecutiveFailures: 2, OnEjection: func(i int, now, until time.Time) {
		got = append(got, ej{i, now, until})
		s.Stats(now, i) // it may call the Set: no lock is held
	}})
	s.Report(t0, 2, Failure)
	s.Report(t0.Add(time.Second), 2, Failure)
	s.Report(t0.Add(time.Second), 1, Failure)
	s.Report(t0.Add(time.Second), 1, Failure) // due, but the bound (one of three) is reached
	if len(got) != 1 || got[0] != (ej{2, t0.Add(time.Second), t0.Add(31 * time.Second)}) {
		t.Fatalf("ejections %+v; want replica 2, at 1s until 31s", got)
	}
}

// Picks stay valid while other goroutines eject replicas between a pick's count of its
// candidates and its choice among them.
func TestPickDuringEjections(t *testing.T) {
	for _, b := range balancers {
		s := mustNew(t, 6, Config{Balancer: b, ConsecutiveUnreachable: 1, MaxEjectedPercent: 100, BaseEjection: time.Millisecond})
		var wg sync.WaitGroup
		wg.Go(func() {
			for k := range 3000 {
				s.Report(t0.Add(time.Duration(k)*100*time.Microsecond), k%6, Unreachable)
			}
		})
		for range 2 {
			wg.Go(func() {
				for k := range 3000 {
					now := t0.Add(time.Duration(k) * 100 * time.Microsecond)
					used := []int{k % 6, (k + 1) % 6}
					i := s.Pick(now, used)
					if i < 0 || i >= 6 {
						t.Errorf("%v: pick %d out of range", b, i)
						return
					}
					s.Done(now, i, Ignored)
				}
			})
		}
		wg.Wait()
	}
}

func TestDoneReportsEjected(t *testing.T) {
	s := mustNew(t, 2, Config{ConsecutiveUnreachable: 2})
	i := s.Pick(t0, nil)
	if s.Done(t0, i, Unreachable) {
		t.Fatal("first refusal: reported ejected")
	}
	i2 := s.Pick(t0, []int{1 - i}) // the same replica again
	if i2 != i || !s.Done(t0, i2, Unreachable) {
		t.Fatal("second refusal: not reported ejected")
	}
	i3 := s.Pick(t0, nil)
	if i3 == i || s.Done(t0, i3, Failure) {
		t.Fatal("a failure at the healthy replica: reported ejected")
	}
}

// TestEjectSlow: a run of ConsecutiveSlow Slow results ejects, but only once it has lasted
// SlowFor with no success: five losers within a pause do not, five over half a second do.
func TestEjectSlow(t *testing.T) {
	if c := mustNew(t, 2, Config{}).Config(); c.ConsecutiveSlow != 5 || c.SlowFor != 500*time.Millisecond {
		t.Fatalf("defaults: ConsecutiveSlow %d, SlowFor %v", c.ConsecutiveSlow, c.SlowFor)
	}
	s := mustNew(t, 4, Config{Seed: 1})
	// Ten losers within 100 ms (a replica pausing): not ejected.
	for i := range 10 {
		s.Report(t0.Add(time.Duration(i)*10*time.Millisecond), 1, Slow)
	}
	if s.Ejected(t0.Add(100*time.Millisecond), 1) {
		t.Fatal("ejected by a run of losers shorter than SlowFor")
	}
	// It answers again: the run is over, and the next starts from scratch.
	s.Report(t0.Add(150*time.Millisecond), 1, Success)
	now := t0.Add(time.Second)
	for i := range 4 {
		s.Report(now.Add(time.Duration(i)*200*time.Millisecond), 1, Slow)
	}
	// 4 losers over 600 ms: long enough, but too few.
	if s.Ejected(now.Add(600*time.Millisecond), 1) {
		t.Fatal("ejected after 4 losers in a row; want 5")
	}
	// Failures and Ignored results neither end a run of losers nor count in it.
	s.Report(now.Add(650*time.Millisecond), 1, Ignored)
	s.Report(now.Add(660*time.Millisecond), 1, Failure)
	end := now.Add(700 * time.Millisecond)
	s.Report(end, 1, Slow)
	if !s.Ejected(end, 1) {
		t.Fatal("not ejected after 5 losers in a row over 700 ms")
	}
	// Latency-induced probation is short: four SlowFor, not BaseEjection.
	if st := s.Stats(end, 1); st.Until != end.Add(2*time.Second) || st.Ejections != 1 {
		t.Fatalf("stats = %+v; want a first ejection for Slow of 2 s", st)
	}
	// The run's failure did not carry over into the failure rule.
	for range 4 {
		s.Report(end, 2, Failure)
	}
	if s.Ejected(end, 2) {
		t.Fatal("replica 2 ejected after 4 failures")
	}
}

// TestSlowInterleavedNeverEjects: a healthy replica loses races now and then, with successes
// in between; however long that goes on, it is never ejected.
func TestSlowInterleavedNeverEjects(t *testing.T) {
	s := mustNew(t, 4, Config{Seed: 1})
	now := t0
	for i := range 100_000 {
		r := Success
		if i%5 < 4 { // four losers out of five: far more than a healthy replica loses
			r = Slow
		}
		s.Report(now, 0, r)
		now = now.Add(time.Second)
	}
	if s.Ejections() != 0 {
		t.Fatalf("%d ejections of a replica that answers between its losers", s.Ejections())
	}
}

// TestSlowRuleOff: ConsecutiveSlow < 0 turns the rule off; SlowFor < 0 lets the count
// alone decide.
func TestSlowRuleOff(t *testing.T) {
	s := mustNew(t, 2, Config{ConsecutiveSlow: -1})
	for i := range 100 {
		s.Report(t0.Add(time.Duration(i)*time.Second), 0, Slow)
	}
	if s.Ejections() != 0 {
		t.Fatal("ejected with the slow rule off")
	}
	s = mustNew(t, 2, Config{ConsecutiveSlow: 2, SlowFor: -1})
	s.Report(t0, 0, Slow)
	s.Report(t0, 0, Slow)
	if !s.Ejected(t0, 0) {
		t.Fatal("not ejected by 2 losers at once with SlowFor < 0")
	}
	if Slow.String() != "slow" {
		t.Fatalf("Slow.String() = %q", Slow.String())
	}
}

// A hedge's pick does not take a turn of the round robin: over two replicas, sequential calls
// that each send a first attempt and a hedge alternate their first attempts (were hedges to
// take turns, every first attempt would land on the same replica).
func TestRoundRobinHedgePicksTakeNoTurn(t *testing.T) {
	s := mustNew(t, 2, Config{Balancer: RoundRobin})
	var firsts [2]int
	for range 30 {
		i := s.Pick(t0, nil)
		j := s.Pick(t0, []int{i})
		if j == i {
			t.Fatalf("hedge picked its primary's replica %d", i)
		}
		firsts[i]++
		s.Done(t0, i, Success)
		s.Done(t0, j, Success)
	}
	if firsts != [2]int{15, 15} {
		t.Fatalf("first attempts per replica %v, want 15 each", firsts)
	}
}

// TestTrialAfterEjection: a replica back from an ejection takes one attempt at a time until it
// answers one with a Success. One that still swallows requests then holds one call, not a
// full share of the first attempts; one that serves again is back in full after one answer.
func TestTrialAfterEjection(t *testing.T) {
	for _, bal := range []Balancer{P2C, Random, RoundRobin, LeastOutstanding} {
		t.Run(bal.String(), func(t *testing.T) {
			s := mustNew(t, 4, Config{Balancer: bal, Seed: 1})
			for range 3 {
				s.Report(t0, 0, Unreachable)
			}
			if !s.Ejected(t0, 0) {
				t.Fatal("not ejected after 3 unreachable")
			}
			back := t0.Add(30 * time.Second)
			if s.Ejected(back, 0) {
				t.Fatal("still ejected after BaseEjection")
			}
			if !s.Stats(back, 0).Trial || s.Stats(back, 1).Trial {
				t.Fatalf("Trial: replica 0 %v, replica 1 %v; want true, false", s.Stats(back, 0).Trial, s.Stats(back, 1).Trial)
			}
			// Nothing answers: every attempt stays outstanding.
			on0 := 0
			for range 200 {
				if s.Pick(back, nil) == 0 {
					on0++
				}
			}
			if on0 != 1 || s.Outstanding(0) != 1 {
				t.Fatalf("%d of 200 first attempts went to the replica on trial (%d outstanding); want 1", on0, s.Outstanding(0))
			}
			// A copy of a call avoids it too while its one attempt is out.
			if i := s.Pick(back, []int{1}); i == 0 {
				t.Fatal("a copy went to the replica on trial while its attempt was outstanding")
			}
			// The attempt is lost: the replica is picked again, one attempt at a time.
			s.Done(back, 0, Slow)
			on0 = 0
			for range 200 {
				if s.Pick(back, nil) == 0 {
					on0++
				}
			}
			if on0 != 1 {
				t.Fatalf("after a lost attempt, %d of 200 first attempts went to the replica on trial; want 1", on0)
			}
			// It answers: the trial is over, and it takes its share again.
			s.Done(back, 0, Success)
			if s.Stats(back, 0).Trial {
				t.Fatal("still on trial after a success")
			}
			on0 = 0
			for range 200 {
				if s.Pick(back, nil) == 0 {
					on0++
				}
			}
			if on0 < 20 {
				t.Fatalf("after a success, %d of 200 first attempts went to the replica; want its share", on0)
			}
		})
	}
}
