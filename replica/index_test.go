package replica

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// Every method that takes a replica number panics with a replica: message when the number is
// not one of the Set's, ReportLoad and Load included (they used to drop the report, or say
// "no report", quietly), and accepts every number that is.
func TestIndexOutOfRangePanics(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 3
	s, err := New(n, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool([]string{"a:1", "b:1", "c:1"}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout([]int{0, 0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]func(i int){
		"Done":         func(i int) { s.Outstanding(0); s.Done(now, i, Ignored) },
		"Report":       func(i int) { s.Report(now, i, Success) },
		"Ejected":      func(i int) { s.Ejected(now, i) },
		"Outstanding":  func(i int) { s.Outstanding(i) },
		"Stats":        func(i int) { s.Stats(now, i) },
		"Troubled":     func(i int) { s.Troubled(now, i) },
		"SilentSince":  func(i int) { s.SilentSince(now, now, i) },
		"ReportLoad":   func(i int) { s.ReportLoad(now, i, Load{Queued: 1, Workers: 4}) },
		"Load":         func(i int) { s.Load(now, i) },
		"Pool.Addr":    func(i int) { p.Addr(i) },
		"Layout.Group": func(i int) { l.Group(i) },
	}
	for name, call := range methods {
		for _, i := range []int{-1, n, n + 61, math.MinInt} {
			want := fmt.Sprintf("replica: index %d out of range [0,%d)", i, n)
			func() {
				defer func() {
					if got := recover(); got != want {
						t.Errorf("%s(%d): panic %v, want %q", name, i, got, want)
					}
				}()
				call(i)
			}()
		}
		for i := range n {
			call(i) // one of the Set's: no panic
		}
	}
}
