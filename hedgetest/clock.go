// Package hedgetest helps test code that uses hedging policies: a clock that
// moves only when the test says so, to drive the explicit-time methods of the
// hedge packages (which take now time.Time) through exact scenarios, and
// scripted attempt functions that answer when and how a test says, for
// running hedge.Do inside a testing/synctest bubble, and the agreement scenarios
// ([Scenarios], [TestDriver]) that every driver of the core's state machine must
// play alike: a transport or a driver of your own can run them from its tests.
//
// It imports the root package hedge (for [Script]), so the internal tests of
// package hedge and of the packages it imports cannot use it; their explicit-time
// methods take plain times instead.
package hedgetest

import (
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultStart is where the zero ManualClock starts: 2026-01-01T00:00:00Z.
// A fixed instant keeps test output, logs and golden files the same on every
// run.
func DefaultStart() time.Time { return defaultStart }

var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A ManualClock is a clock that moves only when told, by Advance or Set. Its
// times carry no monotonic clock reading, so they print, compare and
// subtract as plain wall-clock times.
//
// The zero value is ready to use and starts at [DefaultStart]. A ManualClock
// is safe for concurrent use; it must not be copied after first use.
type ManualClock struct {
	start    time.Time
	hasStart bool         // false in the zero value: start at DefaultStart
	ns       atomic.Int64 // nanoseconds since start
}

// NewManualClock returns a clock that reads start until moved. Times it
// reports are in start's location, without a monotonic clock reading.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{start: start.Round(0), hasStart: true}
}

func (c *ManualClock) origin() time.Time {
	if !c.hasStart {
		return defaultStart
	}
	return c.start
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	return c.origin().Add(time.Duration(c.ns.Load()))
}

// Since returns the time elapsed on the clock since t, like [time.Since].
func (c *ManualClock) Since(t time.Time) time.Duration {
	return c.Now().Sub(t)
}

// Advance moves the clock forward by d and returns the new time. Concurrent
// calls each add their d. It panics if d is negative: a clock that moves back
// breaks the code under test in ways a real clock would not.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	if d < 0 {
		panic(fmt.Sprintf("hedgetest: ManualClock.Advance(%v): negative duration", d))
	}
	for {
		cur := c.ns.Load()
		next := cur + int64(d)
		if next < cur {
			panic(fmt.Sprintf("hedgetest: ManualClock.Advance(%v): time overflows", d))
		}
		if c.ns.CompareAndSwap(cur, next) {
			return c.origin().Add(time.Duration(next))
		}
	}
}

// Set moves the clock to t. It panics if t is before the clock's current
// time, or so far from the start that the offset cannot be represented
// (about 292 years).
func (c *ManualClock) Set(t time.Time) {
	o := c.origin()
	off := t.Sub(o)
	if !o.Add(off).Equal(t) {
		panic(fmt.Sprintf("hedgetest: ManualClock.Set(%v): more than 292 years from %v", t, o))
	}
	for {
		cur := c.ns.Load()
		if int64(off) < cur {
			panic(fmt.Sprintf("hedgetest: ManualClock.Set(%v): before the current time %v",
				t, o.Add(time.Duration(cur))))
		}
		if c.ns.CompareAndSwap(cur, int64(off)) {
			return
		}
	}
}
