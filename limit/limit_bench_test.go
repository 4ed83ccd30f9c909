package limit

import (
	"testing"
	"time"
)

func BenchmarkAcquireRelease(b *testing.B) {
	g := mustNew(b, Config{MaxLimit: 1000, InitialLimit: 1000, MinLimit: 1000})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		p, ok := g.Acquire(now)
		if !ok {
			b.Fatal("refused")
		}
		g.Release(now.Add(time.Millisecond), p, Success)
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	g := mustNew(b, Config{MaxLimit: 1000, InitialLimit: 1000, MinLimit: 1000})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			now = now.Add(time.Microsecond)
			p, ok := g.Acquire(now)
			if !ok {
				b.Error("refused")
				return
			}
			g.Release(now.Add(time.Millisecond), p, Success)
		}
	})
}

// BenchmarkAcquireReleaseIgnored is the path of a cancelled hedge loser: no
// sample, no lock.
func BenchmarkAcquireReleaseIgnoredParallel(b *testing.B) {
	g := mustNew(b, Config{MaxLimit: 1000, InitialLimit: 1000, MinLimit: 1000})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			p, ok := g.Acquire(now)
			if !ok {
				b.Error("refused")
				return
			}
			g.Release(now, p, Ignored)
		}
	})
}
