package replica_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge/replica"
)

var local, remote = []string{"l0:80", "l1:80"}, []string{"r0:80", "r1:80"}

func groupedPool(t *testing.T, cfg replica.Config) *replica.Pool {
	t.Helper()
	cfg.Seed = 1
	p, err := replica.NewGroupedPool([]replica.Group{{Addrs: local}, {Addrs: remote}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// First attempts stay in the first group; a hedge goes to the first group's other replica
// while it is healthy and unused, to the next group otherwise.
func TestLayoutPick(t *testing.T) {
	for _, b := range []replica.Balancer{replica.P2C, replica.Random, replica.RoundRobin, replica.LeastOutstanding} {
		t.Run(b.String(), func(t *testing.T) {
			p := groupedPool(t, replica.Config{Balancer: b, ConsecutiveFailures: 1})
			set, now := p.Set(), time.Unix(0, 0)
			seen := map[int]int{}
			for range 100 {
				i, _ := p.Pick(now, nil)
				seen[i]++
				set.Done(now, i, replica.Success)
			}
			if seen[2]+seen[3] != 0 || seen[0] == 0 || seen[1] == 0 {
				t.Errorf("first attempts: %v, want both local replicas and no remote one", seen)
			}
			for _, tc := range []struct {
				used []int
				want []int
			}{
				{[]int{0}, []int{1}},
				{[]int{1}, []int{0}},
				{[]int{0, 1}, []int{2, 3}},
				{[]int{0, 1, 2}, []int{3}},
				{[]int{0, 1, 2, 3}, []int{0, 1}}, // every one used: a healthy local one again
			} {
				for range 20 {
					i, _ := p.Pick(now, tc.used)
					set.Done(now, i, replica.Ignored)
					if !contains(tc.want, i) {
						t.Fatalf("used %v: picked %d, want one of %v", tc.used, i, tc.want)
					}
				}
			}
			// Local replica 1 ejected: its call's hedge goes remote.
			set.Report(now, 1, replica.Failure)
			if !set.Ejected(now, 1) {
				t.Fatal("replica 1 not ejected")
			}
			for range 20 {
				i, _ := p.Pick(now, nil)
				set.Done(now, i, replica.Ignored)
				if i != 0 {
					t.Fatalf("first attempt with replica 1 ejected: %d, want 0", i)
				}
				if i, _ = p.Pick(now, []int{0}); i != 2 && i != 3 {
					t.Fatalf("hedge with replica 1 ejected: %d, want a remote one", i)
				}
				set.Done(now, i, replica.Ignored)
			}
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A replica's share of its group's attempts follows its weight.
func TestLayoutWeights(t *testing.T) {
	for _, b := range []replica.Balancer{replica.P2C, replica.Random} {
		p, err := replica.NewGroupedPool([]replica.Group{{Addrs: local, Weights: []float64{19, 1}}, {Addrs: remote}}, replica.Config{Balancer: b, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		now, canary := time.Unix(0, 0), 0
		const n = 4000
		for range n {
			i, _ := p.Pick(now, nil)
			p.Set().Done(now, i, replica.Success)
			if i == 1 {
				canary++
			}
		}
		if share := float64(canary) / n; share < 0.03 || share > 0.07 {
			t.Errorf("%v: the canary (weight 1 of 20) took %.3f of the attempts, want about 0.05", b, share)
		}
	}
}

func TestNewGroupedPoolErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		groups []replica.Group
		cfg    replica.Config
	}{
		"no group":             {nil, replica.Config{}},
		"empty group":          {[]replica.Group{{Addrs: local}, {}}, replica.Config{}},
		"address in two":       {[]replica.Group{{Addrs: local}, {Addrs: []string{"l0:80"}}}, replica.Config{}},
		"weights count":        {[]replica.Group{{Addrs: local, Weights: []float64{1}}}, replica.Config{}},
		"zero weight":          {[]replica.Group{{Addrs: local, Weights: []float64{1, 0}}}, replica.Config{}},
		"weights, round-robin": {[]replica.Group{{Addrs: local, Weights: []float64{2, 1}}}, replica.Config{Balancer: replica.RoundRobin}},
	} {
		if _, err := replica.NewGroupedPool(tc.groups, tc.cfg); !errors.Is(err, replica.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

// WithGroups keeps the health of an address that moves to another group.
func TestWithGroupsKeepsHealth(t *testing.T) {
	p := groupedPool(t, replica.Config{ConsecutiveFailures: 1})
	now := time.Unix(0, 0)
	p.Set().Report(now, 0, replica.Failure) // l0 ejected
	q, err := p.WithGroups([]replica.Group{{Addrs: remote}, {Addrs: local}})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Set().Ejected(now, q.Index("l0:80")) || q.Layout().Group(q.Index("l0:80")) != 1 {
		t.Error("l0 lost its ejection, or its new group")
	}
	if !q.SameGroups([]replica.Group{{Addrs: remote}, {Addrs: local}}) || q.SameGroups([]replica.Group{{Addrs: local}, {Addrs: remote}}) {
		t.Error("SameGroups")
	}
}

func TestLayoutPickAllocatesNothing(t *testing.T) {
	p := groupedPool(t, replica.Config{})
	now, used := time.Unix(0, 0), []int{0}
	if n := testing.AllocsPerRun(100, func() {
		i, _ := p.Pick(now, used)
		p.Set().Done(now, i, replica.Ignored)
	}); n != 0 {
		t.Errorf("Pick allocates %v times", n)
	}
}
