package sim

import (
	"fmt"
	"slices"
	"time"
)

// chooser is one client's replica choice: which replica an attempt goes to, given the replicas
// its call has used, and the news that an attempt is no longer outstanding. The core's replica
// package makes this decision for hedgehttp and hedgegrpc; the simulator reaches it through
// this interface only, so the engine does not depend on how the choice is made.
type chooser interface {
	pick(now time.Time, used []int) int
	done(now time.Time, replica int, ok bool)
}

// Balancer names (Params.Balancer, -balancer). Scripts select them by these names.
const (
	BalancerRandom           = "random"
	BalancerRoundRobin       = "round-robin"
	BalancerLeastOutstanding = "least-outstanding"
	BalancerP2C              = "p2c"
)

// Balancers are the balancer names, best first by what they know: p2c and least-outstanding
// see the outstanding attempts, round-robin and random do not.
var Balancers = []string{BalancerP2C, BalancerLeastOutstanding, BalancerRoundRobin, BalancerRandom}

func checkBalancer(name string) error {
	if !slices.Contains(Balancers, name) {
		return fmt.Errorf("sim: unknown balancer %q (want random, round-robin, least-outstanding or p2c)", name)
	}
	return nil
}

// localSet is a replica set's choice of replica: the balancers of SIMULATION.md over the
// outstanding attempts one client has sent, preferring replicas the call has not used.
type localSet struct {
	kind string
	out  []int64
	rr   uint64
	rng  uint64
}

func newLocalSet(kind string, n int, seed uint64) *localSet {
	return &localSet{kind: kind, out: make([]int64, n), rng: seed}
}

func (b *localSet) rand() uint64 {
	b.rng += 0x9e3779b97f4a7c15
	return mix(b.rng)
}

func (b *localSet) randn(n int) int { return int(uint64(uint32(b.rand())) * uint64(n) >> 32) }

// tier is 0 for a replica the call has not used, 1 for one it has.
func tier(i int, used []int) int {
	if slices.Contains(used, i) {
		return 1
	}
	return 0
}

func (b *localSet) nth(t, m int, used []int) int {
	for i := range b.out {
		if tier(i, used) == t {
			if m == 0 {
				return i
			}
			m--
		}
	}
	return 0
}

func (b *localSet) pick(_ time.Time, used []int) int {
	n := len(b.out)
	best, k := 1, n
	if free := n - countUsed(n, used); free > 0 {
		best, k = 0, free
	}
	var i int
	switch b.kind {
	case BalancerRandom:
		i = b.nth(best, b.randn(k), used)
	case BalancerRoundRobin:
		b.rr++
		i = int(b.rr % uint64(n))
		for tier(i, used) != best {
			i = (i + 1) % n
		}
	case BalancerLeastOutstanding:
		start := b.randn(n)
		i = -1
		for j := range n {
			c := (start + j) % n
			if tier(c, used) == best && (i < 0 || b.out[c] < b.out[i]) {
				i = c
			}
		}
	default: // p2c
		if k == 1 {
			i = b.nth(best, 0, used)
			break
		}
		x, y := b.randn(k), b.randn(k-1)
		if y >= x {
			y++
		}
		i = b.nth(best, x, used)
		if j := b.nth(best, y, used); b.out[j] < b.out[i] {
			i = j
		}
	}
	b.out[i]++
	return i
}

func countUsed(n int, used []int) int {
	c := 0
	for i := range n {
		if slices.Contains(used, i) {
			c++
		}
	}
	return c
}

func (b *localSet) done(_ time.Time, i int, _ bool) { b.out[i]-- }
