package replica_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/replica"
)

// A Set picks a replica per attempt; a hedge or retry passes the replicas its call already
// used, and goes elsewhere.
func ExampleSet_Pick() {
	s, err := replica.New(3, replica.Config{Balancer: replica.RoundRobin, Seed: 1})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	var used [3]int // a call's replicas, on the stack: Pick allocates nothing
	tried := used[:0]

	primary := s.Pick(now, tried)
	tried = append(tried, primary)
	hedge := s.Pick(now, tried)
	fmt.Println("hedge avoids the primary's replica:", hedge != primary)

	// The hedge won: the primary is cancelled, which says nothing about its replica.
	s.Done(now, hedge, replica.Success)
	s.Done(now, primary, replica.Ignored)
	fmt.Println("outstanding:", s.Outstanding(primary), s.Outstanding(hedge))
	// Output:
	// hedge avoids the primary's replica: true
	// outstanding: 0 0
}

// A replica that refuses connections is ejected after three attempts in a row that could not
// reach it, and is not picked again until its ejection ends.
func ExampleSet_Report() {
	s, _ := replica.New(2, replica.Config{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 3 {
		s.Report(now, 0, replica.Unreachable) // connection refused
	}
	fmt.Println("replica 0 ejected:", s.Ejected(now, 0), "until", s.Stats(now, 0).Until.Format(time.TimeOnly))

	picks := map[int]int{}
	for range 10 {
		i := s.Pick(now, nil)
		picks[i]++
		s.Done(now, i, replica.Success)
	}
	fmt.Println("picks:", picks)

	// Back in service 30 s later; failing again ejects it for twice as long.
	now = now.Add(30 * time.Second)
	for range 3 {
		s.Report(now, 0, replica.Unreachable)
	}
	fmt.Println("ejected again for", s.Stats(now, 0).Until.Sub(now))
	// Output:
	// replica 0 ejected: true until 00:00:30
	// picks: map[1:10]
	// ejected again for 1m0s
}

// A Pool gives a Set's replicas addresses, for transports that know replicas by host:port.
func ExamplePool() {
	p, _ := replica.NewPool([]string{"10.0.0.1:80", "10.0.0.2:80"}, replica.Config{})
	now := time.Now()
	i, addr := p.Pick(now, nil)
	j, other := p.Pick(now, []int{i})
	fmt.Println(addr != other, p.Index(other) == j)
	p.Set().Done(now, i, replica.Success)
	p.Set().Done(now, j, replica.Ignored)

	// The list of replicas changed: health carries over for the addresses that stayed.
	q, _ := p.With([]string{"10.0.0.2:80", "10.0.0.3:80"})
	fmt.Println(q.Len(), q.Addr(0))
	// Output:
	// true true
	// 2 10.0.0.2:80
}

func ExampleParseBalancer() {
	b, err := replica.ParseBalancer("least-outstanding")
	fmt.Println(b, err)
	// Output: least-outstanding <nil>
}
