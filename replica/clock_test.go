package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A result stamped before the Set's anchor (the first time it saw: results from goroutines
// whose clocks were read a moment apart, or a simulator's clock at the zero time.Time) ejects
// for BaseEjection, as any other: the guard against an ejection overflowing the tick range
// must not overflow itself and make it one for ever.
func TestEjectionBeforeTheAnchor(t *testing.T) {
	for _, before := range []time.Time{t0.Add(-time.Millisecond), {}} {
		var until time.Time
		s := mustNew(t, 3, Config{Seed: 1, OnEjection: func(_ int, _, u time.Time) { until = u }})
		s.Ejected(t0, 0) // the Set's clock starts at t0
		eject(t, s, before, 0)
		if d := until.Sub(before); d != DefaultBaseEjection {
			t.Errorf("ejected at %v, before the anchor: OnEjection's end is %v later, want %v", before, d, DefaultBaseEjection)
		}
		if d := s.Stats(before, 0).Until.Sub(before); d != DefaultBaseEjection {
			t.Errorf("ejected at %v, before the anchor: Stats.Until is %v later, want %v", before, d, DefaultBaseEjection)
		}
		if s.Ejected(t0.Add(time.Minute), 0) {
			t.Errorf("ejected at %v for %v, still ejected a minute after the anchor", before, DefaultBaseEjection)
		}
	}
}

// A load report received centuries before the anchor (at the zero time.Time) is old an hour
// after it: its age saturates instead of wrapping round to a negative one, which would keep
// it fresh for ever and send every copy to the replica it names.
func TestLoadReportFromTheDistantPast(t *testing.T) {
	s := mustNew(t, 3, Config{Seed: 1})
	s.Ejected(t0, 0) // the anchor
	s.ReportLoad(time.Time{}, 2, Load{Workers: 4, Wait: time.Millisecond})
	now := t0.Add(time.Hour)
	if l, ok := s.Load(now, 2); ok {
		t.Fatalf("a report received at the zero time is fresh an hour after the anchor: %+v", l)
	}
	s.ReportLoad(now, 1, Load{Queued: 1, Workers: 4})
	for range 20 {
		i := s.Pick(now, []int{0})
		s.Done(now, i, Ignored)
		if i != 1 {
			t.Fatalf("a copy went to replica %d, want 1, the only fresh report (2's is from year 1)", i)
		}
	}
	// A report received one tick before the anchor is one, not the slot's mark for none.
	s.ReportLoad(t0.Add(-time.Nanosecond), 0, Load{Queued: 3, Workers: 4})
	if l, ok := s.Load(t0, 0); !ok || l.Queued != 3 {
		t.Fatalf("a report received 1 ns before the anchor: Load = %+v, %v; want it, fresh", l, ok)
	}
}

// An ejection count decays by BaseEjection spans, taken in 64 bits: on a 32-bit platform
// (GOARCH=386 runs this test so) the spans of a short BaseEjection over a few seconds do not
// fit an int, and a truncated count would make the next ejection the longest one.
func TestEjectionDecayIn64Bits(t *testing.T) {
	s := mustNew(t, 2, Config{Seed: 1, ConsecutiveUnreachable: 1, BaseEjection: time.Nanosecond, MaxEjection: time.Hour})
	s.Report(t0, 0, Unreachable)
	s.Report(t0.Add(time.Second), 0, Unreachable) // ejected twice: 2 ns
	later := t0.Add(4 * time.Second)              // 4e9 BaseEjections in service: more than an int32 holds
	s.Report(later, 0, Unreachable)
	if st := s.Stats(later, 0); st.Ejections != 1 || st.Until.Sub(later) != time.Nanosecond {
		t.Fatalf("ejected after 4 s in service: %d ejections, for %v; want 1, for 1ns (every earlier one forgotten)", st.Ejections, st.Until.Sub(later))
	}
}

// A pool that shrinks ends only ejections still running: one that ended before the change
// keeps its end, from which the replica's ejection count decays, so its next ejection, a day
// later, lasts BaseEjection and not twice that.
func TestWithShrinkLeavesEndedEjections(t *testing.T) {
	p, err := NewPool([]string{"a", "b", "c"}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, p.Set(), t0, 0) // a: out for 30 s
	change := t0.Add(time.Minute)
	eject(t, p.Set(), change, 1) // b: out for 30 s; a is back
	q, err := p.With([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Set().Ejected(change, 1) {
		t.Fatal("b's ejection, the only one running, was ended by the change")
	}
	later := t0.Add(24 * time.Hour)
	eject(t, q.Set(), later, 0)
	if st := q.Set().Stats(later, 0); st.Ejections != 1 || st.Until.Sub(later) != DefaultBaseEjection {
		t.Fatalf("a ejected again after a day in service: %d ejections, for %v; want 1, for %v", st.Ejections, st.Until.Sub(later), DefaultBaseEjection)
	}
}

// An ejection that a shrinking pool ends is over at the change, and the replica's ejection
// count decays from then on, as after an ejection that ran its course.
func TestWithShrinkEndedEjectionDecays(t *testing.T) {
	p, err := NewPool([]string{"a", "b", "c", "d"}, Config{MaxEjectedPercent: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, p.Set(), t0, 0)
	eject(t, p.Set(), t0.Add(time.Millisecond), 1) // ends later: the one kept
	q, err := p.With([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Second)
	if q.Set().Ejected(now, 0) || !q.Set().Ejected(now, 1) {
		t.Fatalf("rebuilt onto 2 of 4 (one ejection allowed): a ejected %v, b %v; want a back, b out", q.Set().Ejected(now, 0), q.Set().Ejected(now, 1))
	}
	i, _ := q.Pick(now, []int{1})
	q.Set().Done(now, i, Success) // a answers: its trial is over
	later := t0.Add(24 * time.Hour)
	eject(t, q.Set(), later, 0)
	if st := q.Set().Stats(later, 0); st.Ejections != 1 || st.Until.Sub(later) != DefaultBaseEjection {
		t.Fatalf("a ejected again a day after the change let it back: %d ejections, for %v; want 1, for %v", st.Ejections, st.Until.Sub(later), DefaultBaseEjection)
	}
}

// NewPool and With refuse an address listed twice, as NewGroupedPool does: twice, it would be
// two replicas, and a hedge could go back to the address its primary used.
func TestPoolRefusesTheSameAddressTwice(t *testing.T) {
	many := make([]string, 20) // past the size checked without a map
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d:80", i)
	}
	many[19] = many[3]
	for _, addrs := range [][]string{{"a", "a"}, {"a", "b", "a"}, many} {
		want := fmt.Sprintf("%q", addrs[len(addrs)-1])
		if _, err := NewPool(addrs, Config{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("NewPool(%v) = %v; want an error wrapping ErrInvalidConfig naming %s", addrs, err, want)
		}
		p, err := NewPool([]string{"a", "b"}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.With(addrs); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("With(%v) = %v; want an error wrapping ErrInvalidConfig naming %s", addrs, err, want)
		}
	}
	if _, err := NewPool(many[:19], Config{}); err != nil {
		t.Errorf("NewPool of 19 distinct addresses: %v", err)
	}
}
