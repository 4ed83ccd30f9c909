package replica

import (
	"testing"
	"time"
)

// A replica that left the pool (its connection dropped) and comes back takes its health from
// the earlier pool it was last in: still ejected, its ejection count remembered, so a replica
// that fails, restarts and fails again is held out longer each time, not given a clean slate.
// Without the earlier pool it comes back fresh, as With has always made a new address.
func TestPoolWithTakesHealthFromAnEarlierPool(t *testing.T) {
	p, err := NewPool([]string{"a", "b", "c"}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, p.Set(), t0, 0)                // a fails and is ejected
	gone, err := p.With([]string{"b", "c"}) // a's connection drops
	if err != nil {
		t.Fatal(err)
	}
	gone.Set().Report(t0.Add(time.Second), 0, Success) // b answers: gone's clock runs on
	now := t0.Add(2 * time.Second)
	back, err := gone.With([]string{"a", "b", "c"}, p) // a is READY again; p is where it was last
	if err != nil {
		t.Fatal(err)
	}
	if st := back.Set().Stats(now, back.Index("a")); !st.Ejected || st.Ejections != 1 || !st.Trial {
		t.Errorf("a back after its connection dropped: %+v; want still ejected, 1 ejection remembered, on trial", st)
	}
	if back.Set().Ejected(now, back.Index("b")) {
		t.Error("b ejected after the change")
	}
	fresh, err := gone.With([]string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if st := fresh.Set().Stats(now, fresh.Index("a")); st.Ejected || st.Ejections != 0 {
		t.Errorf("a back with no earlier pool: %+v; want a clean slate", st)
	}
	// A pool of another line (its own clock) is passed over: its ticks count from elsewhere.
	other, err := NewPool([]string{"a", "z"}, Config{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	eject(t, other.Set(), t0.Add(-time.Hour), 0)
	if q, err := gone.With([]string{"a", "b"}, other); err != nil {
		t.Fatal(err)
	} else if q.Set().Ejected(now, q.Index("a")) {
		t.Error("a took its health from a pool with another clock")
	}
}
