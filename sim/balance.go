package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/hedgekit/hedge/replica"
)

// chooser is one client's replica choice: which replica an attempt goes to, given the replicas
// its call has used, and the news that an attempt is no longer outstanding. The decision is the
// core's (package replica, the same code hedgehttp and hedgegrpc use); the engine reaches it only
// through this interface. draw is the pick's random draw for a first attempt (used empty),
// keyed by the call so that hedging, which draws from the set's own stream, never moves it.
type chooser interface {
	pick(now time.Time, used []int, draw uint64) int
	done(now time.Time, replica int, r replica.Result)
	// load: the replica reported its queue on a response (Setup.ServerLoad).
	load(now time.Time, i int, l replica.Load)
}

// Balancer names (Params.Balancer, -balancer): replica.Balancer's names. Scripts select them by
// these names.
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

// replicaSet is a *replica.Set as the engine's chooser.
type replicaSet struct{ s *replica.Set }

// newReplicaSet is one client's replica.Set of n replicas with the named balancer, its random
// draws seeded (a replica.Set draws nothing else, so a run repeats).
func newReplicaSet(balancer string, n int, seed uint64) (replicaSet, error) {
	b, err := replica.ParseBalancer(balancer)
	if err != nil {
		return replicaSet{}, err
	}
	s, err := replica.New(n, replica.Config{Balancer: b, Seed: seed | 1})
	return replicaSet{s}, err
}

func (r replicaSet) pick(now time.Time, used []int, draw uint64) int {
	if len(used) == 0 {
		return r.s.PickWith(now, used, draw)
	}
	return r.s.Pick(now, used)
}

func (r replicaSet) done(now time.Time, i int, res replica.Result) { r.s.Done(now, i, res) }

func (r replicaSet) load(now time.Time, i int, l replica.Load) {
	r.s.ReportLoad(now, i, l)
}
