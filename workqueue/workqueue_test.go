package workqueue

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustNew(t *testing.T, cfg Config) *Queue {
	t.Helper()
	q, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return q
}

// acquireAsync starts a request that acquires a slot on its own goroutine, as a server's
// request goroutine would, and waits until it is admitted or blocked in the wait list. Its
// admission arrives on the returned channel; an admitted request then holds its slot until
// release is closed.
func acquireAsync(ctx context.Context, q *Queue, hedged bool, release <-chan struct{}) <-chan Admission {
	out := make(chan Admission, 1)
	go func() {
		a := q.Acquire(ctx, hedged)
		out <- a
		if a.Outcome == Admitted {
			<-release
			q.Release(false)
		}
	}()
	synctest.Wait()
	return out
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		cfg               Config
		workers, capacity int
	}{
		{Config{}, 4 * runtime.GOMAXPROCS(0), 4 * runtime.GOMAXPROCS(0)},
		{Config{Workers: 3}, 3, 3},
		{Config{Workers: 3, Queue: 7}, 3, 7},
		{Config{Workers: 3, Queue: -1}, 3, 0},
	} {
		s := mustNew(t, tc.cfg).Stats()
		if s.Workers != tc.workers || s.Capacity != tc.capacity {
			t.Errorf("New(%+v): Workers, Capacity = %d, %d, want %d, %d", tc.cfg, s.Workers, s.Capacity, tc.workers, tc.capacity)
		}
	}
	if _, err := New(Config{Workers: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("New(Workers: -1) = %v, want an error wrapping ErrConfig", err)
	}
}

// A released slot goes to the oldest first attempt, then to the oldest hedged copy; a late
// arrival never barges ahead of a waiter.
func TestGrantOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 8, HedgedLast: true})
		ctx := context.Background()
		if a := q.Acquire(ctx, false); a.Outcome != Admitted {
			t.Fatalf("first Acquire: %v, want admitted", a.Outcome)
		}
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, r := range []struct {
			name   string
			hedged bool
		}{{"h1", true}, {"f1", false}, {"h2", true}, {"f2", false}} {
			wg.Go(func() {
				if a := q.Acquire(ctx, r.hedged); a.Outcome != Admitted {
					t.Errorf("%s: %v, want admitted", r.name, a.Outcome)
					return
				}
				mu.Lock()
				order = append(order, r.name)
				mu.Unlock()
				q.Release(false)
			})
			synctest.Wait() // each one queued before the next arrives
		}
		if s := q.Stats(); s.Queued != 4 || s.QueuedHedged != 2 || s.Running != 1 {
			t.Fatalf("Stats = %+v, want 4 queued, 2 of them hedged, 1 running", s)
		}
		q.Release(false)
		wg.Wait()
		want := []string{"f1", "f2", "h1", "h2"}
		if len(order) != len(want) {
			t.Fatalf("order = %v, want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("order = %v, want %v", order, want)
			}
		}
		if s := q.Stats(); s.Running != 0 || s.Queued != 0 || s.Admitted != 5 {
			t.Errorf("Stats = %+v, want nothing running or queued, 5 admitted", s)
		}
	})
}

// Without HedgedLast a hedged request is a request like any other: one FIFO lane.
func TestNoHedgedLastIsOneLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 1})
		ctx := context.Background()
		q.Acquire(ctx, false)
		release := make(chan struct{})
		h := acquireAsync(ctx, q, true, release)
		if a := q.Acquire(ctx, false); a.Outcome != Rejected || a.Queued != 1 {
			t.Errorf("first attempt behind a full lane: %+v, want rejected with 1 queued", a)
		}
		q.Release(false)
		if a := <-h; a.Outcome != Admitted {
			t.Errorf("hedged waiter: %v, want admitted", a.Outcome)
		}
		close(release)
		synctest.Wait()
		if s := q.Stats(); s.Evicted != 0 || s.Rejected != 1 || s.QueuedHedged != 0 {
			t.Errorf("Stats = %+v, want 1 rejected, nothing evicted", s)
		}
	})
}

// A first attempt that finds the wait list full pushes out the newest hedged waiter; a
// hedged request, or a first attempt when no hedged one waits, is rejected.
func TestFirstAttemptEvictsNewestHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 2, HedgedLast: true})
		ctx := context.Background()
		q.Acquire(ctx, false)
		release := make(chan struct{})
		h1 := acquireAsync(ctx, q, true, release)
		time.Sleep(time.Second)
		h2 := acquireAsync(ctx, q, true, release)
		time.Sleep(time.Second)

		if a := q.Acquire(ctx, true); a.Outcome != Rejected {
			t.Errorf("hedged request behind a full list: %v, want rejected", a.Outcome)
		}
		f1 := acquireAsync(ctx, q, false, release)
		a := <-h2
		if a.Outcome != Evicted || a.Wait != time.Second {
			t.Errorf("newest hedged waiter: %+v, want evicted after 1s", a)
		}
		select {
		case a := <-h1:
			t.Fatalf("older hedged waiter ended (%+v), want it still waiting", a)
		default:
		}
		f2 := acquireAsync(ctx, q, false, release)
		if a := <-h1; a.Outcome != Evicted || a.Wait != 2*time.Second {
			t.Errorf("older hedged waiter: %+v, want evicted after 2s", a)
		}
		if a := q.Acquire(ctx, false); a.Outcome != Rejected || a.Queued != 2 {
			t.Errorf("first attempt behind two first attempts: %+v, want rejected with 2 queued", a)
		}

		q.Release(false)
		if a := <-f1; a.Outcome != Admitted {
			t.Errorf("f1: %v, want admitted", a.Outcome)
		}
		close(release)
		if a := <-f2; a.Outcome != Admitted {
			t.Errorf("f2: %v, want admitted", a.Outcome)
		}
		synctest.Wait()
		s := q.Stats()
		if s.Evicted != 2 || s.Rejected != 2 || s.Admitted != 3 || s.Running != 0 || s.Queued != 0 {
			t.Errorf("Stats = %+v, want 2 evicted, 2 rejected, 3 admitted, nothing left", s)
		}
	})
}

// A waiter whose context is done leaves the list without taking a slot; the slot goes to
// the next waiter.
func TestWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 4})
		q.Acquire(context.Background(), false)
		ctx, cancel := context.WithCancel(context.Background())
		release := make(chan struct{})
		gone := acquireAsync(ctx, q, false, release)
		next := acquireAsync(context.Background(), q, false, release)
		time.Sleep(3 * time.Second)
		cancel()
		if a := <-gone; a.Outcome != Abandoned || a.Wait != 3*time.Second || a.Queued != 1 {
			t.Errorf("cancelled waiter: %+v, want abandoned after 3s with 1 still queued", a)
		}
		q.Release(true)
		if a := <-next; a.Outcome != Admitted || a.Wait != 3*time.Second {
			t.Errorf("next waiter: %+v, want admitted after 3s", a)
		}
		close(release)
		synctest.Wait()
		s := q.Stats()
		if s.Abandoned != 1 || s.Admitted != 2 || s.Cancelled != 1 || s.Running != 0 || s.Queued != 0 {
			t.Errorf("Stats = %+v, want 1 abandoned, 2 admitted, 1 cancelled, nothing left", s)
		}
	})
}

// A slot handed over just as the waiter's context is done is passed on unused.
func TestGrantAndCancelTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: 4})
		q.Acquire(context.Background(), false)
		ctx, cancel := context.WithCancel(context.Background())
		release := make(chan struct{})
		close(release)
		// The waiter is granted and cancelled before its goroutine runs again: hold the
		// queue's lock so that it cannot see one without the other.
		gone := acquireAsync(ctx, q, false, release)
		q.mu.Lock()
		q.release()
		cancel()
		q.mu.Unlock()
		if a := <-gone; a.Outcome != Abandoned {
			t.Errorf("waiter granted and cancelled at once: %v, want abandoned", a.Outcome)
		}
		if s := q.Stats(); s.Abandoned != 1 || s.Admitted != 1 || s.Running != 0 {
			t.Errorf("Stats = %+v, want 1 abandoned, 1 admitted, the slot freed", s)
		}
	})
}

// Stats sums and bounds the waits of admitted requests.
func TestStatsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := mustNew(t, Config{Workers: 1, Queue: -1})
		ctx := context.Background()
		if a := q.Acquire(ctx, false); a.Outcome != Admitted || a.Wait != 0 {
			t.Fatalf("free worker: %+v, want admitted without waiting", a)
		}
		if a := q.Acquire(ctx, false); a.Outcome != Rejected {
			t.Fatalf("no queue: %v, want rejected", a.Outcome)
		}
		q.Release(false)

		q = mustNew(t, Config{Workers: 1, Queue: 2})
		q.Acquire(ctx, false)
		release := make(chan struct{})
		a1 := acquireAsync(ctx, q, false, release)
		time.Sleep(time.Second)
		a2 := acquireAsync(ctx, q, false, release)
		time.Sleep(time.Second)
		q.Release(false) // a1 waited 2s
		<-a1
		time.Sleep(2 * time.Second)
		close(release) // a2, queued at 1s, waited 3s
		<-a2
		synctest.Wait()
		s := q.Stats()
		if s.Admitted != 3 || s.WaitTotal != 5*time.Second || s.WaitMax != 3*time.Second {
			t.Errorf("Stats = %+v, want 3 admitted, 5s waited in all, 3s at most", s)
		}
	})
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Admitted: "admitted", Rejected: "rejected", Evicted: "evicted", Abandoned: "abandoned", Finished: "finished", 0: "Outcome(0)", 9: "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", uint8(o), got, want)
		}
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	q, err := New(Config{Workers: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if q.Acquire(ctx, false).Outcome == Admitted {
				q.Release(false)
			}
		}
	})
}
