package hedge

import (
	"sync"
	"testing"
	"time"
)

func TestOvertakes(t *testing.T) {
	var o overtakes
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if _, ok := o.since(1, at(0)); ok {
		t.Fatal("call 1 overtaken before anything answered")
	}
	o.answered(1, at(5)) // the first call answers: nothing is overtaken
	if _, ok := o.since(1, at(6)); ok {
		t.Error("a call that answered counts as overtaken by itself")
	}
	o.answered(4, at(10)) // calls 2 and 3 are overtaken at 10ms
	o.answered(3, at(12)) // an earlier call answering moves nothing
	for _, s := range []int64{2, 3} {
		if d, ok := o.since(s, at(25)); !ok || d != 15*time.Millisecond {
			t.Errorf("call %d: since = %v, %v; want 15ms", s, d, ok)
		}
	}
	if _, ok := o.since(4, at(25)); ok {
		t.Error("call 4 is overtaken by nothing")
	}
	// A call overtaken by more calls than the ring remembers is long in service.
	o.answered(4+2*overtakeRing, at(30))
	if d, ok := o.since(2, at(31)); !ok || d < time.Minute {
		t.Errorf("call 2 after the ring wrapped: %v, %v; want long ago", d, ok)
	}
	if d, ok := o.since(4+overtakeRing+10, at(31)); !ok || d != time.Millisecond {
		t.Errorf("a call the ring still remembers: %v, %v; want 1ms", d, ok)
	}
}

// TestOvertakesConcurrent: answers recorded from many goroutines at once leave every call
// that has not answered, below the highest one that has, overtaken at a time one of the
// answers reported.
func TestOvertakesConcurrent(t *testing.T) {
	var o overtakes
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := int64(g); i < 800; i += 8 {
				if (i+1)%3 != 0 { // every third call never answers
					o.answered(i+1, t0.Add(time.Duration(i)*time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	now := t0.Add(time.Second)
	for s := int64(3); s < 798; s += 3 {
		d, ok := o.since(s, now)
		if !ok || d < 200*time.Millisecond || d > time.Second {
			t.Fatalf("call %d: since %v, %v", s, d, ok)
		}
	}
}

func TestBacklogFloor(t *testing.T) {
	b := backlog{period: int64(30 * time.Second)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if f := b.floor(); f != 0 {
		t.Fatalf("floor before any median: %v", f)
	}
	b.observe(t0, 10*time.Millisecond)
	b.observe(t0.Add(time.Second), 8*time.Millisecond)
	b.observe(t0.Add(2*time.Second), 20*time.Millisecond)
	if f := b.floor(); f != 8*time.Millisecond {
		t.Errorf("floor %v, want the lowest, 8ms", f)
	}
	b.observe(t0.Add(31*time.Second), 30*time.Millisecond) // next period: the last one still counts
	if f := b.floor(); f != 8*time.Millisecond {
		t.Errorf("floor one period on %v, want 8ms", f)
	}
	b.observe(t0.Add(61*time.Second), 40*time.Millisecond) // two periods on: forgotten
	if f := b.floor(); f != 30*time.Millisecond {
		t.Errorf("floor two periods on %v, want 30ms", f)
	}
}

func TestCrossingsShare(t *testing.T) {
	x := crossings{period: int64(time.Second)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := int64(1000)
	x.share(t0, calls) // the first block begins
	if _, ok := x.share(t0, calls+crossBlock-1); ok {
		t.Fatalf("a share before %d calls", crossBlock)
	}
	// One second: 100 calls, 5 cross (bad luck).
	for i := range 100 {
		calls++
		if i%20 == 0 {
			x.crossed(t0.Add(time.Duration(i)*10*time.Millisecond), calls)
		}
	}
	if _, ok := x.share(t0.Add(999*time.Millisecond), calls); ok {
		t.Error("a share over less than a period: a busy client's stall of a few milliseconds would fill it")
	}
	if sh, ok := x.share(t0.Add(time.Second), calls); !ok || sh != 0.05 {
		t.Errorf("share %v, %v; want 0.05", sh, ok)
	}
	// The next second every call crosses: the share over both seconds jumps.
	next := t0.Add(time.Second)
	for i := range 100 {
		calls++
		x.crossed(next.Add(time.Duration(i)*10*time.Millisecond), calls)
	}
	if sh, ok := x.share(next.Add(999*time.Millisecond), calls); !ok || sh != 0.525 {
		t.Errorf("share %v, %v; want 105/200", sh, ok)
	}
	// A thin client: 10 calls a second. A block lasts until it holds crossBlock calls, so
	// the share is over some 7 seconds, not one.
	y := crossings{period: int64(time.Second)}
	calls = 0
	y.share(t0, calls)
	for i := range 64 {
		calls++
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		if i%16 == 0 {
			y.crossed(now, calls)
		}
		if sh, ok := y.share(now, calls); ok != (i == 63) || (ok && sh != 4.0/64) {
			t.Fatalf("call %d: share %v, %v; want one only at the 64th call, 4/64", i, sh, ok)
		}
	}
	// 30 quiet seconds later the counts are forgotten.
	if _, ok := y.share(t0.Add(40*time.Second), calls); ok {
		t.Error("a share from calls long gone")
	}
}
