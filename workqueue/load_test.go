package workqueue

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// twoRunningOneWaiting returns a queue of 2 workers, both running a request, with a third
// waiting; closing release ends all three.
func twoRunningOneWaiting(t *testing.T) (*Queue, chan struct{}) {
	q := mustNew(t, Config{Workers: 2, Queue: 4})
	ctx := context.Background()
	release := make(chan struct{})
	acquireAsync(ctx, q, false, release)
	acquireAsync(ctx, q, false, release)
	acquireAsync(ctx, q, false, release) // waits
	return q, release
}

func TestLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, release := twoRunningOneWaiting(t)

		l := q.Load(3 * time.Millisecond)
		if l.Queued != 1 || l.Busy != 2 || l.Workers != 2 || l.Wait != 3*time.Millisecond {
			t.Fatalf("Load = %+v, want 1 queued, 2 of 2 busy, wait 3ms", l)
		}
		if u := l.Utilization(); u != 1.5 {
			t.Fatalf("Utilization = %v, want (2+1)/2", u)
		}
		if l.QPS != 0 {
			t.Fatalf("QPS = %v at the first report, want 0 (no time has passed)", l.QPS)
		}

		// Within the first second, the rate so far; after it, the rate over the window.
		time.Sleep(500 * time.Millisecond)
		if l := q.Load(0); l.QPS != 0 {
			t.Fatalf("QPS = %v with no admission since the first report, want 0", l.QPS)
		}
		close(release)
		synctest.Wait() // the two running release; the waiter is admitted and releases too
		time.Sleep(250 * time.Millisecond)
		if l := q.Load(0); math.Abs(l.QPS-1/0.75) > 1e-9 {
			t.Fatalf("QPS = %v, want 1 admission over 0.75s", l.QPS)
		}
		for range 9 {
			q.Acquire(context.Background(), false)
			q.Release(false)
		}
		// Within the first window the estimate is renewed only every earlyEvery: a report
		// soon after the last one repeats it.
		time.Sleep(earlyEvery / 2)
		if l := q.Load(0); math.Abs(l.QPS-1/0.75) > 1e-9 {
			t.Fatalf("QPS = %v %v after the last estimate, want it unchanged (1 admission over 0.75s)", l.QPS, earlyEvery/2)
		}
		time.Sleep(earlyEvery / 2)
		if l := q.Load(0); math.Abs(l.QPS-10/0.85) > 1e-9 {
			t.Fatalf("QPS = %v, want 10 admissions over 0.85s", l.QPS)
		}
		time.Sleep(time.Second - earlyEvery)
		if l := q.Load(0); math.Abs(l.QPS-10/1.75) > 1e-9 {
			t.Fatalf("QPS = %v, want 10 admissions over 1.75s", l.QPS)
		}
		time.Sleep(2 * time.Second)
		if l := q.Load(0); l.QPS != 0 || l.Busy != 0 || l.Queued != 0 {
			t.Fatalf("Load = %+v after 2 idle seconds, want nothing", l)
		}
	})
}

// TestCounts: Counts reads what Load reads but the rate, and leaves the rate's window alone:
// a Load after Counts still starts it.
func TestCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, release := twoRunningOneWaiting(t)
		if l := q.Counts(3 * time.Millisecond); l != (Load{Queued: 1, Busy: 2, Workers: 2, Wait: 3 * time.Millisecond}) {
			t.Fatalf("Counts = %+v, want 1 queued, 2 of 2 busy, wait 3ms, no rate", l)
		}
		time.Sleep(500 * time.Millisecond)
		if l := q.Load(0); l.QPS != 0 {
			t.Fatalf("QPS = %v at the first Load, want 0 (Counts started no window)", l.QPS)
		}
		close(release)
		synctest.Wait()
		time.Sleep(250 * time.Millisecond)
		if l := q.Load(0); math.Abs(l.QPS-1/0.25) > 1e-9 {
			t.Fatalf("QPS = %v, want 1 admission over the 0.25s since the first Load", l.QPS)
		}
	})
}

func TestUtilizationWithoutWorkers(t *testing.T) {
	if u := (Load{Busy: 3}).Utilization(); u != 0 {
		t.Fatalf("Utilization with no workers = %v, want 0", u)
	}
}

// The first rate is estimated earlyEvery after the first report, not at the next one: a
// handful of requests 50µs after it are no rate of 100,000 a second, which would have a
// load-aware balancer send a new server everything.
func TestFirstRateWaitsForEarlyEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 2})
		q.Load(0)
		for range 5 {
			q.Acquire(context.Background(), false)
			q.Release(false)
		}
		time.Sleep(50 * time.Microsecond)
		if l := q.Load(0); l.QPS != 0 {
			t.Fatalf("QPS = %v 50µs after the first report, want 0 (no estimate before %v)", l.QPS, earlyEvery)
		}
		time.Sleep(earlyEvery)
		if l := q.Load(0); math.Abs(l.QPS-5/(earlyEvery+50*time.Microsecond).Seconds()) > 1e-9 {
			t.Fatalf("QPS = %v, want 5 admissions over %v", l.QPS, earlyEvery+50*time.Microsecond)
		}
	})
}
