package winrate

import (
	"testing"
	"time"
)

func BenchmarkAdmitStarted(b *testing.B) {
	l := mustNew(b, Config{})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		if l.Admit(now) {
			l.Started(now)
		}
	}
}

func BenchmarkAdmitStartedParallel(b *testing.B) {
	l := mustNew(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			now = now.Add(time.Millisecond)
			if l.Admit(now) {
				l.Started(now)
			}
		}
	})
}
