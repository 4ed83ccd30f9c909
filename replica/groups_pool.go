package replica

import (
	"fmt"
	"slices"
)

// NewGroupedPool returns a Pool over the replicas of groups, in order: the first group's
// addresses are replicas 0 to len-1, the next group's follow, and so on; its Pick follows
// the groups and their weights (see [Layout]). The groups and their slices must not be
// modified afterwards. It returns an error wrapping [ErrInvalidConfig] when there is no
// address, a group is empty, an address is in two groups, a weight is invalid or cfg is.
func NewGroupedPool(groups []Group, cfg Config) (*Pool, error) {
	var addrs []string
	var groupOf []int
	var weights []float64
	weighted := false
	for g, gr := range groups {
		if len(gr.Addrs) == 0 {
			return nil, fmt.Errorf("%w: group %d has no address", ErrInvalidConfig, g)
		}
		if gr.Weights != nil && len(gr.Weights) != len(gr.Addrs) {
			return nil, fmt.Errorf("%w: group %d: %d weights for %d addresses", ErrInvalidConfig, g, len(gr.Weights), len(gr.Addrs))
		}
		weighted = weighted || gr.Weights != nil
		for j, a := range gr.Addrs {
			if slices.Contains(addrs, a) {
				return nil, fmt.Errorf("%w: address %q is in two groups, or twice in one", ErrInvalidConfig, a)
			}
			w := 1.0
			if gr.Weights != nil {
				w = gr.Weights[j]
			}
			addrs, groupOf, weights = append(addrs, a), append(groupOf, g), append(weights, w)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: a Pool needs at least one address", ErrInvalidConfig)
	}
	if !weighted {
		weights = nil
	}
	l, err := NewLayout(groupOf, weights)
	if err != nil {
		return nil, err
	}
	p, err := NewPool(addrs, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.check(p.set); err != nil {
		return nil, err
	}
	p.layout, p.groups = l, groups
	return p, nil
}

// Layout returns the pool's groups, or nil for a pool without (built by [NewPool]).
func (p *Pool) Layout() *Layout { return p.layout }

// SameGroups reports whether groups are the pool's, in the same order with the same weights.
// It is cheap when groups is the very slice the Pool was built from.
func (p *Pool) SameGroups(groups []Group) bool {
	if p.layout == nil || len(groups) != len(p.groups) {
		return false
	}
	if len(groups) == 0 || &groups[0] == &p.groups[0] {
		return true
	}
	for g, gr := range groups {
		if !slices.Equal(gr.Addrs, p.groups[g].Addrs) || !slices.Equal(gr.Weights, p.groups[g].Weights) {
			return false
		}
	}
	return true
}

// WithGroups is [Pool.With] for groups: a Pool over groups with p's configuration, in which
// every address that p also has keeps its health, whatever group it moved to, and one p
// lacks takes it from the first of earlier that has it.
func (p *Pool) WithGroups(groups []Group, earlier ...*Pool) (*Pool, error) {
	q, err := NewGroupedPool(groups, p.set.cfg)
	if err != nil {
		return nil, err
	}
	moved, err := p.With(q.addrs, earlier...) // the health of the addresses that stay, or came back
	if err != nil {
		return nil, err
	}
	moved.layout, moved.groups = q.layout, groups
	return moved, nil
}
