package breaker

import (
	"testing"
	"time"
)

func BenchmarkAcquireReleaseClosed(b *testing.B) {
	br := mustNew(b, Config{})
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Microsecond)
		t, err := br.Acquire(now)
		if err != nil {
			b.Fatal(err)
		}
		br.Release(now, t, Success)
	}
}

func BenchmarkAcquireReleaseClosedParallel(b *testing.B) {
	br := mustNew(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			now = now.Add(time.Microsecond)
			t, err := br.Acquire(now)
			if err != nil {
				b.Error(err)
				return
			}
			br.Release(now, t, Success)
		}
	})
}

func BenchmarkErrorRate(b *testing.B) {
	br := mustNew(b, Config{})
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		t, _ := br.Acquire(now)
		br.Release(now, t, Outcome(i%2*2))
	}
	now := t0.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		br.ErrorRate(now)
	}
}
