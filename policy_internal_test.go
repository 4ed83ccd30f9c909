package hedge

import (
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge/replica"
)

func TestYieldIsLearntPerPolicy(t *testing.T) {
	p := MustNew(Config{Trigger: After(1)})
	if !p.yieldPays(1) {
		t.Fatal("a new policy does not try yielding")
	}
	for range 20 {
		p.yielded(false) // the answer was never ready: an I/O-bound dependency
	}
	if p.yieldPays(1) || p.yieldPays(63) {
		t.Fatal("still yielding after 20 yields that did not pay")
	}
	if !p.yieldPays(64) {
		t.Fatal("never probes again: one call in 64 should")
	}
	for range 20 {
		p.yielded(true)
	}
	if !p.yieldPays(1) || p.yieldScore.Load() != yieldScoreBound {
		t.Fatalf("after yields that paid: score %d, want %d and yielding", p.yieldScore.Load(), yieldScoreBound)
	}
}

func TestSchedulerProbeReadsRuntimeMetrics(t *testing.T) {
	probe := newSchedulerProbe()
	probe() // the first reading is against nothing
	done := make(chan struct{})
	for range 100 { // give the scheduler something to measure
		go func() { done <- struct{}{} }()
	}
	for range 100 {
		<-done
	}
	if d := probe(); d < 0 || d > time.Hour {
		t.Fatalf("scheduler latency p99 = %v, want a duration in [0, 1h]", d)
	}
}

// A Route routed again while the state machine reads it (a re-pick after the pool was rebuilt
// with more replicas) is read as one To left it: never the new Set's index with the old Set,
// which is out of its range.
func TestRouteReadWhileRouted(t *testing.T) {
	small, err := replica.New(2, replica.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	big, err := replica.New(8, replica.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 3000 {
		var r Route
		r.To(small, 1)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.To(big, 7) }()
		go func() {
			defer wg.Done()
			r.troubled(now) // panics on (small, 7)
			if set, i, ok := r.replica(); !ok || !(set == small && i == 1 || set == big && i == 7) {
				t.Errorf("read (%p, %d, %v), want (small, 1) or (big, 7)", set, i, ok)
			}
		}()
		wg.Wait()
	}
}

// A reader of the overload pause (overloaded, on every hedge decision) that runs while
// noteOverload stores it must not end it: the pause's length is stored before its end, so
// that no reader finds an end further off than the length (what a clock stepped back looks
// like) and cuts the pause to nothing.
func TestOverloadPauseSurvivesAReaderBetweenItsStores(t *testing.T) {
	p := MustNew(Config{Trigger: After(time.Millisecond)})
	now := time.Unix(1_000_000, 0)
	overloadStored = func() { p.overloaded(now) }
	t.Cleanup(func() { overloadStored = nil })
	p.noteOverload(now, 0) // the default cooldown, 5s
	if !p.overloaded(now.Add(time.Second)) {
		t.Fatalf("a second into a 5s overload pause, hedging is not paused (until %d, for %d)", p.overloadUntil.Load()-now.UnixNano(), p.overloadFor.Load())
	}
}
