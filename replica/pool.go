package replica

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Pool is a [Set] whose replicas have addresses, for transports that know replicas by address
// (host:port) rather than by number. Replica i of the Set is Addr(i). A Pool is immutable
// apart from its Set's state: when the addresses change, [Pool.With] returns a new Pool that
// keeps the health of the addresses still present. It is safe for concurrent use.
type Pool struct {
	addrs  []string
	set    *Set
	layout *Layout // nil: one group (see NewGroupedPool)
	groups []Group // as given to NewGroupedPool
}

// NewPool returns a Pool over addrs, which must not be empty nor modified afterwards. It
// returns an error wrapping [ErrInvalidConfig] when addrs is empty, lists an address twice
// (as [NewGroupedPool] does), or cfg is invalid. An address is one replica: twice, it
// would be two replicas to the Set, and a hedge could go back to the very address its
// primary used while another one is healthy and unused.
func NewPool(addrs []string, cfg Config) (*Pool, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: a Pool needs at least one address", ErrInvalidConfig)
	}
	if a, ok := duplicate(addrs); ok {
		return nil, fmt.Errorf("%w: address %q is listed twice", ErrInvalidConfig, a)
	}
	s, err := New(len(addrs), cfg)
	if err != nil {
		return nil, err
	}
	return &Pool{addrs: addrs, set: s}, nil
}

// duplicate returns an address that addrs lists twice, and false when there is none.
func duplicate(addrs []string) (string, bool) {
	if len(addrs) <= 16 { // the common case: no map
		for i, a := range addrs {
			if slices.Contains(addrs[:i], a) {
				return a, true
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(addrs))
	for _, a := range addrs {
		if _, ok := seen[a]; ok {
			return a, true
		}
		seen[a] = struct{}{}
	}
	return "", false
}

// Set returns the Set whose replica i is Addr(i).
func (p *Pool) Set() *Set { return p.set }

// Len is the number of addresses.
func (p *Pool) Len() int { return len(p.addrs) }

// Addr returns the address of replica i. It panics, as the Set's methods do, when i is not
// in 0 to Len()-1.
func (p *Pool) Addr(i int) string {
	if uint(i) >= uint(len(p.addrs)) {
		outOfRange(i, len(p.addrs))
	}
	return p.addrs[i]
}

// Index returns the replica number of addr, or -1.
func (p *Pool) Index(addr string) int {
	for i, a := range p.addrs {
		if a == addr {
			return i
		}
	}
	return -1
}

// Pick is [Set.Pick] returning the address too; for a pool with groups, [Layout.Pick].
func (p *Pool) Pick(now time.Time, used []int) (int, string) {
	if p.layout != nil {
		i := p.layout.Pick(p.set, now, used)
		return i, p.addrs[i]
	}
	i := p.set.Pick(now, used)
	return i, p.addrs[i]
}

// Same reports whether addrs lists the Pool's addresses, in the same order. It is cheap when
// addrs is the very slice the Pool was built from, which is what a resolver that returns the
// same slice until the addresses change gives it.
func (p *Pool) Same(addrs []string) bool {
	if len(addrs) != len(p.addrs) {
		return false
	}
	if len(addrs) == 0 || &addrs[0] == &p.addrs[0] {
		return true
	}
	for i, a := range addrs {
		if a != p.addrs[i] {
			return false
		}
	}
	return true
}

// With returns a Pool over addrs with p's configuration, in which every address that p also
// has keeps its health (its runs of failures and of Slow results, its ejection, its ejection
// count and its trial), so a change in the list of replicas does not give a failing replica a
// clean slate. A pool that shrank keeps no more ejections than its MaxEjectedPercent allows:
// of those still running, the ones that would end soonest end now, and their ejection counts
// decay from now on, as after any ejection. With is given no time: now is the latest result
// the Set was given, which for a Set in use is at most moments ago. Outstanding counts start
// from zero: attempts picked from p end on p. It returns an error wrapping
// [ErrInvalidConfig] when addrs is empty or lists an address twice (see [NewPool]).
//
// An address p does not have takes its health from the first of earlier that has it: a
// transport whose pool holds only the replicas it can reach now (gRPC's READY backends) keeps,
// for one whose connection dropped, the pool it was last in, so that a replica that fails,
// drops its connection and comes back (a crash loop, a restart) comes back as it left, ejected
// and remembered, not with a clean slate. An earlier pool counts only if it was derived from
// p's line (by With or WithGroups, sharing p's clock); others are passed over.
func (p *Pool) With(addrs []string, earlier ...*Pool) (*Pool, error) {
	cfg := p.set.cfg
	cfg.Seed = p.set.rand()
	q, err := NewPool(addrs, cfg)
	if err != nil {
		return nil, err
	}
	old, nw := p.set, q.set
	if a := old.anchor.Load(); a != nil {
		nw.anchor.Store(a)
	}
	// From earlier pools first, each under its own lock alone: no two Sets' locks are held
	// at once, whatever pools a caller passes.
	for i, addr := range addrs {
		if p.Index(addr) >= 0 {
			continue
		}
		for _, e := range earlier {
			j := -1
			if e != nil && e != p {
				j = e.Index(addr)
			}
			if j < 0 {
				continue
			}
			if a := e.set.anchor.Load(); a != nil && a != nw.anchor.Load() {
				break // another clock: its ticks would misdate the ejection
			}
			e.set.mu.Lock()
			copyHealth(&e.set.reps[j], &nw.reps[i], nw)
			e.set.mu.Unlock()
			break
		}
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	now := old.seen()
	nw.lastBad = now // the time of the change, for the next one (nw is not shared yet)
	for i, addr := range addrs {
		j := p.Index(addr)
		if j < 0 {
			continue
		}
		copyHealth(&old.reps[j], &nw.reps[i], nw)
	}
	// A pool that shrank may hold more ejections than its Set allows at once (MaxEjectedPercent;
	// none in a pool of one): the extra ones end now, those that would end soonest first, so
	// that some replica is always in service. Only ejections still running count: one that
	// ended before now is no ejection to end, and its end is where its ejection count decays
	// from. An ejection ended here ends at now, not never, for the same reason: a replica
	// whose end were never would remember its ejections for good, and its next one would
	// last longer than one after as long a time in service should. They stay on trial.
	var ejected []int
	for i := range nw.reps {
		if nw.inForce(nw.reps[i].until.Load(), now) {
			ejected = append(ejected, i)
		}
	}
	if len(ejected) > nw.maxEj {
		slices.SortFunc(ejected, func(a, b int) int { return cmp.Compare(nw.reps[b].until.Load(), nw.reps[a].until.Load()) })
		for _, i := range ejected[nw.maxEj:] {
			nw.reps[i].until.Store(now)
		}
	}
	for i := range nw.reps {
		nw.noteEnd(nw.reps[i].until.Load())
	}
	return q, nil
}

// copyHealth gives replica to of nw (not shared yet) the health of from, whose Set's lock the
// caller holds.
func copyHealth(from, to *replica, nw *Set) {
	to.until.Store(from.until.Load())
	to.failing.Store(from.failing.Load())
	to.failures, to.unreachable, to.ejections = from.failures, from.unreachable, from.ejections
	to.slow, to.slowSince = from.slow, from.slowSince
	if from.trial.Load() && !to.trial.Load() {
		// Back from an ejection and not yet answered: still one attempt at a time.
		to.trial.Store(true)
		nw.trials.Add(1)
	}
}
