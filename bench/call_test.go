package bench

import (
	"testing"
	"time"
	"unsafe"

	"github.com/hedgekit/hedge"
)

// BenchmarkCall is the decision state machine alone, driven with explicit
// times and no goroutines, timers or channels: the share of Do's cost that is
// hedging logic rather than concurrency plumbing. One op = Reset, Start, the
// first attempt answering OK, as in BenchmarkDo/*-no-fire.
func BenchmarkCall(b *testing.B) {
	b.Logf("sizeof(hedge.Call) = %d bytes", unsafe.Sizeof(hedge.Call{}))
	for _, c := range []struct {
		name string
		cfg  hedge.Config
	}{
		{"hedge-no-fire", hedge.Config{Trigger: hedge.After(noFireDelay)}},
		{"quantile-no-fire", hedge.Config{Trigger: hedge.AtQuantile(0.95)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := mustPolicy(b, c.cfg)
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			call := p.NewCall(hedge.CallOptions{})
			var i int64
			step := func() {
				i++
				now := base.Add(time.Duration(i) * time.Microsecond)
				call.Reset(p, hedge.CallOptions{})
				call.Start(now)
				call.AttemptDone(now.Add(time.Microsecond), 0, hedge.Outcome{})
				if !call.Done() || call.Winner() != 0 {
					b.Fatalf("call not won by attempt 0: %v", call.Log())
				}
			}
			for range 200 {
				step() // warms AtQuantile
			}
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
		})
	}
	b.Run("reset-only", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		call := p.NewCall(hedge.CallOptions{})
		b.ReportAllocs()
		for b.Loop() {
			call.Reset(p, hedge.CallOptions{})
		}
	})
}
