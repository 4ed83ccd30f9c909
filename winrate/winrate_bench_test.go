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

// BenchmarkBinomialTailBelow: the lower tail of a period with very many hedges, whose first
// term underflows to 0: it stops there (a few steps), not after k terms.
func BenchmarkBinomialTailBelow(b *testing.B) {
	for b.Loop() {
		if !binomialTailBelow(5e6, 1e8, 0.1, falseAlarm) {
			b.Fatal("5% of hedges won against a floor of 10%, over 1e8: not short")
		}
	}
}
