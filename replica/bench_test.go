package replica

import (
	"fmt"
	"testing"
)

// BenchmarkPick measures a pick and its Done, the per-attempt cost of replica choice, for each
// balancer and a small and a larger fleet: for a first attempt (no replica used, none
// ejected: the common case) and for a hedge whose call has used one replica.
//
//	go test -run '^$' -bench Pick -benchmem -count 6 ./replica/
func BenchmarkPick(b *testing.B) {
	for _, n := range []int{4, 64} {
		for _, bal := range balancers {
			for _, kind := range []string{"first", "hedge"} {
				var used []int
				if kind == "hedge" {
					used = []int{1}
				}
				b.Run(fmt.Sprintf("%v/%d/%s", bal, n, kind), func(b *testing.B) {
					s := mustNew(b, n, Config{Balancer: bal, Seed: 1})
					b.ReportAllocs()
					for b.Loop() {
						i := s.Pick(t0, used)
						s.Done(t0, i, Success)
					}
				})
			}
		}
	}
}

// BenchmarkPickParallel is a first attempt's Pick and Done from every core on one Set.
func BenchmarkPickParallel(b *testing.B) {
	s := mustNew(b, 4, Config{Seed: 1})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := s.Pick(t0, nil)
			s.Done(t0, i, Success)
		}
	})
}
