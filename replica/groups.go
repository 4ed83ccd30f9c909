package replica

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Group is one group of replicas for [NewGroupedPool]: replicas in one zone, region or
// release. The groups of a pool are ordered: a call's attempts go to the first group while it
// has a healthy replica the call has not used, and only then to the next (see [Layout]).
type Group struct {
	// Addrs are the group's replicas (host:port), none of them in another group.
	Addrs []string
	// Weights, when not nil, holds one weight per address, each > 0 and finite: a replica
	// receives a share of its group's attempts in proportion to its weight (a canary at 1
	// beside replicas at 19 receives about 5 %). nil means every replica weighs the same.
	// Unequal weights need the P2C or Random balancer.
	Weights []float64
}

// Layout places the replicas of a [Set] in ordered groups, with weights: how a dependency
// served from several zones sends each call to the nearest one and hedges or retries to a
// farther one only when it must. [Layout.Pick] prefers, in this order, a replica that is not
// ejected and that the call has not used, then one that is not ejected, then an ejected one
// the call has not used, then any (as [Set.Pick] does); within each preference the first
// group that has such a replica wins, and within that group the Set's Balancer chooses, by
// weight. So first attempts go to the first group; a hedge goes to another replica of the
// same group while one is healthy and unused, and to the next group otherwise; and when a
// whole group is ejected, its calls go to the next one. Health and ejection stay the
// Set's, per replica, as without groups. A Layout is immutable and safe for concurrent use.
type Layout struct {
	groupOf []int     // the group of each replica
	weight  []float64 // the weight of each replica
	members [][]int   // the replicas of each group, in order
	equal   bool      // every weight is the same
}

// NewLayout returns the layout of n = len(groupOf) replicas: replica i is in group
// groupOf[i] (groups are numbered from 0, in the order they are tried, none empty) and
// weighs weights[i] (nil: every replica weighs 1). It returns an error wrapping
// [ErrInvalidConfig] when a group is empty or negative, a weight is not > 0 and finite, or the
// weights sum to more than a float64 holds.
func NewLayout(groupOf []int, weights []float64) (*Layout, error) {
	n := len(groupOf)
	if n == 0 {
		return nil, fmt.Errorf("%w: a Layout needs at least one replica", ErrInvalidConfig)
	}
	if weights != nil && len(weights) != n {
		return nil, fmt.Errorf("%w: %d weights for %d replicas", ErrInvalidConfig, len(weights), n)
	}
	for i, g := range groupOf { // before the groups are counted: a negative count would not make a slice
		if g < 0 {
			return nil, fmt.Errorf("%w: replica %d in group %d: groups are numbered from 0", ErrInvalidConfig, i, g)
		}
	}
	groups := slices.Max(groupOf) + 1
	l := &Layout{groupOf: slices.Clone(groupOf), weight: make([]float64, n), members: make([][]int, groups), equal: true}
	var total float64
	for i, g := range groupOf {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		if !(w > 0) || math.IsInf(w, 1) {
			return nil, fmt.Errorf("%w: replica %d weighs %v: a weight must be > 0 and finite", ErrInvalidConfig, i, w)
		}
		l.weight[i] = w
		l.equal = l.equal && w == l.weight[0]
		l.members[g] = append(l.members[g], i)
		if total += w; math.IsInf(total, 1) {
			// Each finite, but a draw in proportion to them would sum to +Inf and always land
			// on the last replica.
			return nil, fmt.Errorf("%w: the weights sum to more than a float64 holds (replica %d weighs %v)", ErrInvalidConfig, i, w)
		}
	}
	for g, m := range l.members {
		if len(m) == 0 {
			return nil, fmt.Errorf("%w: group %d has no replica", ErrInvalidConfig, g)
		}
	}
	return l, nil
}

// Len is the number of replicas the layout places.
func (l *Layout) Len() int { return len(l.groupOf) }

// Groups is the number of groups.
func (l *Layout) Groups() int { return len(l.members) }

// Group returns the group of replica i. It panics, as a [Set]'s methods do, when i is not in
// 0 to Len()-1.
func (l *Layout) Group(i int) int {
	if uint(i) >= uint(len(l.groupOf)) {
		outOfRange(i, len(l.groupOf))
	}
	return l.groupOf[i]
}

// check reports whether the layout fits s: as many replicas, and weights its balancer reads.
func (l *Layout) check(s *Set) error {
	if l.Len() != s.Len() {
		return fmt.Errorf("%w: a Layout of %d replicas for a Set of %d", ErrInvalidConfig, l.Len(), s.Len())
	}
	if !l.equal && s.cfg.Balancer != P2C && s.cfg.Balancer != Random {
		return fmt.Errorf("%w: unequal weights need the p2c or random balancer, not %v", ErrInvalidConfig, s.cfg.Balancer)
	}
	return nil
}

// Pick chooses the replica of s for an attempt at now, by group and weight (see [Layout]),
// and counts the attempt as outstanding on it until [Set.Done]. used lists the replicas the
// call has already sent attempts to. s must have the layout's number of replicas. It
// allocates nothing.
func (l *Layout) Pick(s *Set, now time.Time, used []int) int {
	t := s.ticks(now)
	for tier := range 4 {
		for _, m := range l.members {
			if i := l.pickIn(s, m, tier, t, used); i >= 0 {
				s.reps[i].outstanding.Add(1)
				s.reps[i].unanswered.Add(1) // the silence evidence of Set.Troubled, as Set.Pick counts it
				return i
			}
		}
	}
	s.reps[0].outstanding.Add(1) // unreachable: the last tier holds every replica
	s.reps[0].unanswered.Add(1)
	return 0
}

// pickIn chooses among the replicas of one group in the given tier (see Set.tier), or
// returns -1 when the group has none there.
func (l *Layout) pickIn(s *Set, members []int, tier int, t int64, used []int) int {
	var total float64
	k, only := 0, -1
	for _, i := range members {
		if s.tier(i, t, used) == tier {
			total += l.weight[i]
			k, only = k+1, i
		}
	}
	switch {
	case k == 0:
		return -1
	case k == 1:
		return only
	}
	switch s.cfg.Balancer {
	case Random:
		return l.draw(s, members, tier, t, used, total, -1)
	case RoundRobin:
		return l.nth(s, members, tier, t, used, int(s.rr.Add(1)%uint64(k)))
	case LeastOutstanding:
		return l.least(s, members, tier, t, used)
	}
	a := l.draw(s, members, tier, t, used, total, -1)
	b := l.draw(s, members, tier, t, used, total-l.weight[a], a)
	if s.reps[b].outstanding.Load() < s.reps[a].outstanding.Load() {
		return b
	}
	return a
}

// draw picks a replica of the tier in proportion to its weight, skipping skip; total is the
// weight of the candidates.
func (l *Layout) draw(s *Set, members []int, tier int, t int64, used []int, total float64, skip int) int {
	x := float64(s.rand()>>11) / (1 << 53) * total
	last := -1
	for _, i := range members {
		if i == skip || s.tier(i, t, used) != tier {
			continue
		}
		if x -= l.weight[i]; x < 0 {
			return i
		}
		last = i
	}
	if last < 0 {
		return skip // the tier emptied under a concurrent ejection
	}
	return last // rounding
}

// nth returns the m-th replica (from 0) of the tier among members, or the last one there
// when the tier shrank under a concurrent ejection.
func (l *Layout) nth(s *Set, members []int, tier int, t int64, used []int, m int) int {
	last := -1
	for _, i := range members {
		if s.tier(i, t, used) != tier {
			continue
		}
		if m == 0 {
			return i
		}
		m, last = m-1, i
	}
	return last
}

// least returns the replica of the tier among members with the fewest attempts outstanding,
// scanning from a random start so that ties spread.
func (l *Layout) least(s *Set, members []int, tier int, t int64, used []int) int {
	best, start := -1, randn(uint32(s.rand()), len(members))
	for j := range members {
		i := members[(start+j)%len(members)]
		if s.tier(i, t, used) == tier && (best < 0 || s.reps[i].outstanding.Load() < s.reps[best].outstanding.Load()) {
			best = i
		}
	}
	return best
}
