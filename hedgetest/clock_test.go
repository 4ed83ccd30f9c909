package hedgetest

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		s, _ := recover().(string)
		if !strings.HasPrefix(s, "hedgetest: ") || !strings.Contains(s, want) {
			t.Errorf("panic %q, want hedgetest: ...%s", s, want)
		}
	}()
	f()
}

func TestZeroValue(t *testing.T) {
	var c ManualClock
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := c.Now(); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("zero ManualClock Now = %v, want %v", got, want)
	}
	if !DefaultStart().Equal(want) {
		t.Errorf("DefaultStart = %v", DefaultStart())
	}
	if got := c.Advance(time.Second); !got.Equal(want.Add(time.Second)) {
		t.Errorf("Advance = %v", got)
	}
}

func TestNewManualClock(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	start := time.Date(2030, 6, 1, 12, 0, 0, 0, loc)
	c := NewManualClock(start)
	if got := c.Now(); !got.Equal(start) || got.Location() != loc {
		t.Errorf("Now = %v, want %v", got, start)
	}
	// The clock does not move on its own.
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("Now moved to %v", got)
	}
	if got := c.Advance(90 * time.Minute); !got.Equal(start.Add(90 * time.Minute)) {
		t.Errorf("Advance = %v", got)
	}
	if got := c.Advance(0); !got.Equal(start.Add(90 * time.Minute)) {
		t.Errorf("Advance(0) = %v", got)
	}
	if got := c.Since(start); got != 90*time.Minute {
		t.Errorf("Since = %v", got)
	}
	later := start.Add(48 * time.Hour)
	c.Set(later)
	if got := c.Now(); !got.Equal(later) {
		t.Errorf("after Set, Now = %v, want %v", got, later)
	}
	c.Set(later) // setting the same time is not going backwards
	// A start from time.Now loses its monotonic reading, so times print
	// plainly and compare by wall clock.
	wall := NewManualClock(time.Now())
	if s := wall.Now().String(); strings.Contains(s, "m=") {
		t.Errorf("Now carries a monotonic reading: %s", s)
	}
	// The zero time is a valid start.
	z := NewManualClock(time.Time{})
	if got := z.Advance(time.Hour); !got.Equal(time.Time{}.Add(time.Hour)) {
		t.Errorf("from the zero time, Advance = %v", got)
	}
}

func TestPanics(t *testing.T) {
	c := NewManualClock(DefaultStart())
	c.Advance(time.Hour)
	expectPanic(t, "before the current time", func() { c.Set(DefaultStart()) })
	expectPanic(t, "negative duration", func() { c.Advance(-time.Nanosecond) })
	expectPanic(t, "more than 292 years", func() { c.Set(DefaultStart().AddDate(400, 0, 0)) })
	expectPanic(t, "overflows", func() { c.Advance(1<<63 - 1) })
	if got := c.Now(); !got.Equal(DefaultStart().Add(time.Hour)) {
		t.Errorf("a panicking call moved the clock to %v", got)
	}
}

func TestConcurrentAdvance(t *testing.T) {
	var c ManualClock
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			prev := c.Now()
			for range each {
				now := c.Advance(time.Millisecond)
				if now.Before(prev) {
					t.Errorf("time went backwards: %v after %v", now, prev)
					return
				}
				prev = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Since(DefaultStart()), goroutines*each*time.Millisecond; got != want {
		t.Errorf("clock moved %v, want %v", got, want)
	}
}
