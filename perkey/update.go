package perkey

import (
	"errors"
	"maps"
	"reflect"

	"github.com/hedgekit/hedge"
)

// Update calls fn for every key and stores the entry it returns in place of the key's, all
// at once: a lookup sees either every old entry or every new one it replaced. Writers are
// held off while it runs, so an entry created concurrently is created either before (and
// updated) or after (from whatever fn's caller changed first: the new configuration). An
// entry fn fails on keeps its old value; Update returns every error, joined.
func (m *Map[K, V]) Update(fn func(k K, v V) (V, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.m.Load()
	if old == nil {
		return nil
	}
	nm := maps.Clone(*old)
	var errs []error
	for k, v := range *old {
		nv, err := fn(k, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		nm[k] = nv
	}
	m.m.Store(&nm)
	return errors.Join(errs...)
}

// Update calls fn for every entry, replacing it with the one fn returns (see [Map.Update]):
// how an integration follows a configuration that changes while it runs.
func (r *Registry[E]) Update(fn func(key string, e E) (E, error)) error {
	return r.entries.Update(fn)
}

// Rebuild returns the policy a key should run after its configuration changed from was to
// cfg: old itself when the two are the same (nothing it learnt or counted is lost), else a
// new policy that keeps old's latency estimate where it can ([hedge.NewFrom]). Configurations
// are compared field by field, through pointers; a function field (Classify, Observer, a
// callback) compares equal only when both are nil, so a configuration with functions is
// always rebuilt. Compare configurations as written, before an integration adds its hooks.
func Rebuild(old *hedge.Policy, was, cfg hedge.Config, hooks func(hedge.Config) hedge.Config) (p *hedge.Policy, changed bool, err error) {
	if old != nil && reflect.DeepEqual(was, cfg) {
		return old, false, nil
	}
	if hooks != nil {
		cfg = hooks(cfg)
	}
	p, err = hedge.NewFrom(old, cfg)
	return p, err == nil, err
}
