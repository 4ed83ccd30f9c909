package hedge_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/limit"
)

func answerAtOnce(ctx context.Context) (int, error) { return 1, nil }

// answerAfterYield gives up the processor once before answering, as any call that waits for
// I/O does, so Do takes the path with a timer.
func answerAfterYield(ctx context.Context) (int, error) {
	runtime.Gosched()
	return 1, nil
}

// BenchmarkDo measures the fast path: the first attempt answers at once, no hedge fires.
// "gates" turns on the breaker and the adaptive limit, whose cost the fast path pays on
// every call.
func BenchmarkDo(b *testing.B) {
	cases := []struct {
		name string
		cfg  hedge.Config
	}{
		{"no-trigger", hedge.Config{}},
		{"after", hedge.Config{Trigger: hedge.After(50 * time.Millisecond)}},
		{"quantile", hedge.Config{Trigger: hedge.AtQuantile(0.95)}},
		{"quantile-breaker-limit", hedge.Config{Trigger: hedge.AtQuantile(0.95), Breaker: &breaker.Config{}, Limit: &limit.Config{}}},
	}
	for _, c := range cases {
		p := hedge.MustNew(c.cfg)
		ctx := context.Background()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hedge.Do(ctx, p, answerAtOnce)
			}
		})
		b.Run(c.name+"-yield", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hedge.Do(ctx, p, answerAfterYield)
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					hedge.Do(ctx, p, answerAtOnce)
				}
			})
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkCall measures the state machine alone, as the simulator drives it: one call
// whose hedge fires and wins.
func BenchmarkCall(b *testing.B) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		c.Reset(p, hedge.CallOptions{})
		c.Start(now)
		c.TimerFired(now.Add(20 * time.Millisecond))
		c.AttemptDone(now.Add(21*time.Millisecond), 1, hedge.Outcome{})
		now = now.Add(time.Millisecond)
	}
}

// BenchmarkGates measures what the breaker and the limit add to a call that answers before
// its hedge is due, on the state machine alone (no goroutines, no timers, so the difference
// is the gate chain's own cost), serially and from GOMAXPROCS goroutines at once.
func BenchmarkGates(b *testing.B) {
	cases := []struct {
		name string
		cfg  hedge.Config
	}{
		{"quantile", hedge.Config{Trigger: hedge.AtQuantile(0.95)}},
		{"quantile-breaker-limit", hedge.Config{Trigger: hedge.AtQuantile(0.95), Breaker: &breaker.Config{}, Limit: &limit.Config{}}},
	}
	call := func(p *hedge.Policy, c *hedge.Call, now time.Time) {
		c.Reset(p, hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(time.Millisecond), 0, hedge.Outcome{})
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			p := hedge.MustNew(cs.cfg)
			c := p.NewCall(hedge.CallOptions{})
			now := t0
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				call(p, c, now)
				now = now.Add(time.Microsecond)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		b.Run(cs.name+"-parallel", func(b *testing.B) {
			p := hedge.MustNew(cs.cfg)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				c := p.NewCall(hedge.CallOptions{})
				now := t0
				for pb.Next() {
					call(p, c, now)
					now = now.Add(time.Microsecond)
				}
			})
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkCallQuantileNoHedge measures the state machine's path for a call that does not
// hedge under the recommended trigger, as the simulator drives it: the call starts and its
// first attempt answers before the threshold (latency, overtaking and backlog bookkeeping).
func BenchmarkCallQuantileNoHedge(b *testing.B) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	c := p.NewCall(hedge.CallOptions{})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		c.Reset(p, hedge.CallOptions{})
		c.Start(now)
		c.AttemptDone(now.Add(5*time.Millisecond), 0, hedge.Outcome{})
		now = now.Add(time.Millisecond)
	}
}

// BenchmarkReportLoad measures what a client pays per response that carries a server's load
// report (hedgehttp's header, an ORCA report): the policy records it on its load board.
// "many workers" is a server of more workers than a report's 16 bits hold, scaled down.
func BenchmarkReportLoad(b *testing.B) {
	for _, tc := range []struct {
		name string
		load hedge.Load
	}{
		{"16 workers", hedge.Load{Queued: 3, Busy: 16, Workers: 16, Wait: time.Millisecond}},
		{"many workers", hedge.Load{Queued: 40000, Busy: 200000, Workers: 200000, Wait: time.Millisecond}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
			now := t0
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p.ReportLoad(now, i&3, tc.load)
				now = now.Add(time.Microsecond)
				i++
			}
		})
	}
}
