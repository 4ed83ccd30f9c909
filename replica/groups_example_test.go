package replica_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/replica"
)

// A pool in two zones: a call's attempts stay in its own zone while it has a healthy replica
// the call has not used, and only then go to the other.
func ExampleNewGroupedPool() {
	p, err := replica.NewGroupedPool([]replica.Group{
		{Addrs: []string{"10.0.0.1:80", "10.0.0.2:80"}}, // this zone: tried first
		{Addrs: []string{"10.1.0.1:80", "10.1.0.2:80"}}, // the next zone
	}, replica.Config{Seed: 1})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	var used []int
	for range 3 { // a primary and two hedges
		i, addr := p.Pick(now, used)
		used = append(used, i)
		fmt.Println("zone", p.Layout().Group(i), addr[:6])
	}
	// Output:
	// zone 0 10.0.0
	// zone 0 10.0.0
	// zone 1 10.1.0
}
