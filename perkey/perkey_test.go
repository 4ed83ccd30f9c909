package perkey_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/perkey"
)

// Many goroutines asking for the same new key see one value, built once; other keys are
// kept beside it.
func TestMapLoadOrAddOnce(t *testing.T) {
	var m perkey.Map[string, *int]
	var built atomic.Int32
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Go(func() {
			v, err := m.LoadOrAdd("a", func() (*int, error) {
				built.Add(1)
				return new(int), nil
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	if n := built.Load(); n != 1 {
		t.Fatalf("built %d values for one key, want 1", n)
	}
	for _, v := range got {
		if v != got[0] {
			t.Fatal("goroutines saw different values for one key")
		}
	}
	if _, err := m.LoadOrAdd("b", func() (*int, error) { return new(int), nil }); err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Load("a"); !ok || v != got[0] {
		t.Fatal("adding b lost a")
	}
	if n := len(m.Snapshot()); n != 2 {
		t.Fatalf("%d keys, want 2", n)
	}
}

// A failed add keeps nothing, and the next call tries again.
func TestMapFailedAdd(t *testing.T) {
	var m perkey.Map[int, string]
	boom := errors.New("boom")
	if _, err := m.LoadOrAdd(1, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, ok := m.Load(1); ok {
		t.Fatal("a failed add was kept")
	}
	if v, err := m.LoadOrAdd(1, func() (string, error) { return "one", nil }); err != nil || v != "one" {
		t.Fatalf("retry = %q, %v", v, err)
	}
}

type entry struct{ p *hedge.Policy }

func (e *entry) Policy() *hedge.Policy { return e.p }

func TestRegistry(t *testing.T) {
	var r perkey.Registry[*entry]
	if r.Policy("x") != nil || len(r.Measured()) != 0 {
		t.Fatal("an empty registry has a policy")
	}
	var events []string
	obs := func(key string, e hedge.Event) { events = append(events, key+" "+e.Kind.String()) }
	e, err := r.GetOrCreate("x", func() (*entry, error) {
		p, err := hedge.New(perkey.Observe(hedge.Config{Trigger: hedge.After(time.Second)}, "x", obs))
		return &entry{p}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Get("x"); !ok || got != e || r.Policy("x") != e.p {
		t.Fatal("Get or Policy does not return the created entry")
	}
	if _, err := hedge.Do(t.Context(), e.p, func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	m := r.Measured()
	if len(m) != 1 || m["x"].InFlight != 0 {
		t.Fatalf("Measured = %+v, want key x with nothing in flight", m)
	}
	if len(events) == 0 || !strings.HasPrefix(events[0], "x ") {
		t.Fatalf("observer saw %q, want the call's events under key x", events)
	}
}

// Observe calls the template's own observer first, then the integration's with the key.
func TestObserveOrder(t *testing.T) {
	var order []string
	pc := hedge.Config{Observer: func(hedge.Event) { order = append(order, "own") }}
	pc = perkey.Observe(pc, "k", func(key string, _ hedge.Event) { order = append(order, "all:"+key) })
	pc.Observer(hedge.Event{})
	if fmt.Sprint(order) != "[own all:k]" {
		t.Fatalf("order = %v", order)
	}
	if perkey.Observe(hedge.Config{}, "k", nil).Observer != nil {
		t.Fatal("a nil observer added one")
	}
}

// A map with Max keys adds no more: the add is not called, the error is ErrFull, and the
// keys it holds are still found and kept.
func TestMapMax(t *testing.T) {
	m := perkey.Map[int, int]{Max: 2}
	for k := range 2 {
		if _, err := m.LoadOrAdd(k, func() (int, error) { return k * 10, nil }); err != nil {
			t.Fatal(err)
		}
	}
	called := false
	if _, err := m.LoadOrAdd(2, func() (int, error) { called = true; return 20, nil }); !errors.Is(err, perkey.ErrFull) || called {
		t.Fatalf("third key: err %v, add called %v; want ErrFull without a call", err, called)
	}
	if v, err := m.LoadOrAdd(1, func() (int, error) { return -1, nil }); err != nil || v != 10 {
		t.Fatalf("a held key: %d, %v; want 10", v, err)
	}
	if n := len(m.Snapshot()); n != 2 {
		t.Fatalf("%d keys, want 2", n)
	}
}

func TestRegistrySetMax(t *testing.T) {
	var r perkey.Registry[*entry]
	r.SetMax(1)
	mk := func() (*entry, error) {
		p, err := hedge.New(hedge.Config{})
		return &entry{p}, err
	}
	if _, err := r.GetOrCreate("a", mk); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetOrCreate("b", mk); !errors.Is(err, perkey.ErrFull) {
		t.Fatalf("second key: %v, want ErrFull", err)
	}
	if r.Policy("a") == nil || r.Policy("b") != nil || len(r.Measured()) != 1 {
		t.Fatal("the bound changed the keys held: want a alone")
	}
}
