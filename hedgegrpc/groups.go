package hedgegrpc

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc/resolver"
)

// groupKey is the endpoint attribute InGroup sets.
type groupKey struct{}

// groupAttr is an endpoint's place in the replica groups.
type groupAttr struct {
	group  int
	weight float64
}

// InGroup returns ep placed in replica group group (0 is tried first) with weight weight,
// for the [BalancerName] balancer: a resolver (or a manual resolver's state) marks its
// endpoints with it. When any endpoint carries a group, each call's first attempt goes to a
// READY backend of the first group, and a hedge or a retry to another backend of the same
// group while one is healthy and unused by the call, to the next group only when none is;
// within a group, the choice is power of two choices drawn by weight (a canary at 1 beside
// backends at 19 gets about 5 % of the group's attempts). An endpoint without a group is in
// group 0 with weight 1. Health and ejection are per backend, as without groups, and a
// backend keeps them when the resolver places it in a group or takes it out of one; the choice
// is the core's ([replica.Layout]). It panics when group < 0 or weight is not > 0 and finite.
func InGroup(ep resolver.Endpoint, group int, weight float64) resolver.Endpoint {
	if group < 0 || !(weight > 0) || math.IsInf(weight, 1) {
		panic(fmt.Sprintf("hedgegrpc: InGroup(%d, %v): want a group >= 0 and a weight > 0 and finite", group, weight))
	}
	ep.Attributes = ep.Attributes.WithValue(groupKey{}, groupAttr{group, weight})
	return ep
}

// groupOf is an endpoint's group, and whether it has one.
func groupOf(ep resolver.Endpoint) (groupAttr, bool) {
	g, ok := ep.Attributes.Value(groupKey{}).(groupAttr)
	if !ok {
		return groupAttr{0, 1}, false
	}
	return g, true
}

// groupsOf orders ready by group, then address, and returns its replica groups, or nil when
// no backend has a group.
func groupsOf(ready []readyBackend) []replica.Group {
	grouped := false
	for _, r := range ready {
		grouped = grouped || r.hasGroup
	}
	if !grouped {
		return nil
	}
	slices.SortFunc(ready, func(a, b readyBackend) int {
		return cmp.Or(cmp.Compare(a.group.group, b.group.group), strings.Compare(a.addr, b.addr))
	})
	var groups []replica.Group
	for i, r := range ready {
		if i == 0 || r.group.group != ready[i-1].group.group {
			groups = append(groups, replica.Group{})
		}
		g := &groups[len(groups)-1]
		g.Addrs = append(g.Addrs, r.addr)
		g.Weights = append(g.Weights, r.group.weight)
	}
	return groups
}

// updateGroupedPool makes w.pool the pool of groups, keeping the health of the backends that
// stay (and of those that come back, from earlier: see ccWrapper.comeback), whether the pool
// had groups before or not. It reports false when the groups are not
// a valid pool (a backend twice), and then leaves w.pool as it was.
func (w *ccWrapper) updateGroupedPool(groups []replica.Group, earlier []*replica.Pool) bool {
	if w.pool != nil && w.pool.SameGroups(groups) {
		return true
	}
	if w.pool != nil {
		if p, err := w.pool.WithGroups(groups, earlier...); err == nil {
			w.pool = p
			return true
		}
	}
	p, err := replica.NewGroupedPool(groups, replica.Config{Balancer: replica.P2C})
	if err != nil {
		return false
	}
	w.pool = p
	return true
}
