// Package perkey keeps one hedging policy per key, for integrations that call many
// dependencies through one client: hedgehttp keys by host, hedgegrpc by method. Each key gets
// a [hedge.Policy] of its own, built from a template on the key's first call, so that each
// learns its own latency, spends its own budget and trips its own breaker.
//
// The set of keys must be bounded (hosts, methods): an entry lives as long as its registry.
package perkey

import (
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
)

// ErrFull is the error of an add to a [Map] (or a [Registry]) that already holds its Max
// keys: nothing was added, and the caller goes on without an entry for the key.
var ErrFull = errors.New("perkey: the map holds its maximum number of keys")

// Map is a map read on every call and written once per new key: copy-on-write behind an
// atomic pointer, so that a lookup takes no lock and writes nothing shared (a
// sync.RWMutex's reader count would be one more contended cache line per call on every
// core). Each add copies the map, so n keys cost n²/2 copies in all: fine for the bounded
// sets it is meant for (hosts, methods), and the reason for Max. Its zero value is an empty
// map with no bound, safe for concurrent use.
type Map[K comparable, V any] struct {
	// Max, when positive, is how many keys the map holds at most: an add beyond it fails with
	// [ErrFull]. Set it before the map's first use.
	Max int

	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serialises writers
}

// Load returns the value of k, and whether there is one.
func (m *Map[K, V]) Load(k K) (V, bool) {
	if p := m.m.Load(); p != nil {
		v, ok := (*p)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// LoadOrAdd returns the value of k, adding the one add returns when there is none. add runs
// at most once per key at a time, with writers held off; when it fails, nothing is added and
// its error is returned. When the map holds Max keys already, add is not called and the
// error is [ErrFull].
func (m *Map[K, V]) LoadOrAdd(k K, add func() (V, error)) (V, error) {
	if v, ok := m.Load(k); ok {
		return v, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v, nil
		}
		if m.Max > 0 && len(*old) >= m.Max {
			var zero V
			return zero, ErrFull
		}
	}
	v, err := add()
	if err != nil {
		return v, err
	}
	nm := map[K]V{}
	if old != nil {
		nm = maps.Clone(*old)
	}
	nm[k] = v
	m.m.Store(&nm)
	return v, nil
}

// Snapshot returns the map as it stands. It is shared: the caller must not change it.
func (m *Map[K, V]) Snapshot() map[K]V {
	if p := m.m.Load(); p != nil {
		return *p
	}
	return nil
}

// Entry is what a [Registry] keeps per key: an integration's own state for the key (how it
// sends, whether the key's calls are repeatable), with the key's policy.
type Entry interface {
	Policy() *hedge.Policy
}

// Registry holds one entry per key, each with its own policy, created on the key's first
// call. Its zero value is an empty registry with no bound on its keys, safe for concurrent
// use; [Registry.SetMax] bounds it.
type Registry[E Entry] struct {
	entries Map[string, E]
}

// SetMax bounds the registry to n keys (n ≤ 0: no bound): once it holds n, GetOrCreate of a
// new key fails with [ErrFull]. Call it before the registry's first use.
func (r *Registry[E]) SetMax(n int) { r.entries.Max = n }

// Get returns the entry of key, and whether there is one, without creating it.
func (r *Registry[E]) Get(key string) (E, bool) { return r.entries.Load(key) }

// GetOrCreate returns the entry of key, creating it with create on the key's first call.
// create builds the key's policy (see [Observe] for its observer); when it fails, no entry
// is kept and its error is returned, and the next call tries again. A registry that holds its
// maximum of keys (SetMax) creates none and returns [ErrFull].
func (r *Registry[E]) GetOrCreate(key string, create func() (E, error)) (E, error) {
	return r.entries.LoadOrAdd(key, create)
}

// Policy returns the policy of key, or nil when key has no entry yet.
func (r *Registry[E]) Policy(key string) *hedge.Policy {
	if e, ok := r.entries.Load(key); ok {
		return e.Policy()
	}
	return nil
}

// Measured returns each key's [hedge.Measured] figures, for every key called so far.
func (r *Registry[E]) Measured() map[string]hedge.Measured { return r.MeasuredAt(time.Now()) }

// MeasuredAt is [Registry.Measured] at now.
func (r *Registry[E]) MeasuredAt(now time.Time) map[string]hedge.Measured {
	es := r.entries.Snapshot()
	out := make(map[string]hedge.Measured, len(es))
	for key, e := range es {
		out[key] = e.Policy().MeasuredAt(now)
	}
	return out
}

// Observe returns pc with an Observer that also reports each event to obs with key, after
// pc's own Observer: an integration's observer of every key (hedgehttp's and hedgegrpc's
// Config.Observer) on a key's policy. A nil obs leaves pc as it is.
func Observe(pc hedge.Config, key string, obs func(key string, e hedge.Event)) hedge.Config {
	if obs == nil {
		return pc
	}
	inner := pc.Observer
	pc.Observer = func(e hedge.Event) {
		if inner != nil {
			inner(e)
		}
		obs(key, e)
	}
	return pc
}
