package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/latency"
)

// noFireDelay is far above what the benchmarked functions take, so no hedge
// fires: these benchmarks measure the fast path every call pays.
const noFireDelay = 50 * time.Millisecond

// fireDelay is the hedge delay of the benchmarks where every call hedges: the
// primary blocks until cancelled and the hedge answers at once.
const fireDelay = 100 * time.Microsecond

var sink int

// answer returns at once.
func answer(context.Context) (int, error) { return 1, nil }

// yieldOnce gives up its processor once before answering: it answers "at
// once" but not within one scheduling round, like every call that waits for
// I/O. It makes Do take the path where the hedge timer is armed, which
// answer can skip (Do yields once before arming the timer).
func yieldOnce(context.Context) (int, error) {
	runtime.Gosched()
	return 1, nil
}

// blockPrimary is the hedge-fires workload for hedge.Do: attempt 0 waits for
// its context (cancelled when the hedge wins); every other attempt answers at
// once.
func blockPrimary(ctx context.Context) (int, error) {
	if info, _ := hedge.AttemptFrom(ctx); info.Index == 0 {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return 2, nil
}

func mustPolicy(b *testing.B, cfg hedge.Config) *hedge.Policy {
	b.Helper()
	p, err := hedge.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// warm runs enough fast calls for an AtQuantile policy to have a threshold.
func warm(b *testing.B, p *hedge.Policy) {
	b.Helper()
	for range 200 {
		if _, err := hedge.Do(context.Background(), p, answer); err != nil {
			b.Fatal(err)
		}
	}
	if m := p.Measured(); !m.Warm {
		b.Fatalf("policy not warm after 200 calls: %+v", m)
	}
}

func benchDo(b *testing.B, p *hedge.Policy, fn func(context.Context) (int, error), want int) {
	benchDriver(b, hedge.Do[int], p, fn, want)
}

// benchDriver is benchDo for either driver, hedge.Do or hedge.DoInline.
func benchDriver(b *testing.B, do func(context.Context, *hedge.Policy, func(context.Context) (int, error)) (int, error), p *hedge.Policy, fn func(context.Context) (int, error), want int) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		v, err := do(ctx, p, fn)
		if err != nil || v != want {
			b.Fatalf("Do = %d, %v; want %d", v, err, want)
		}
		sink += v
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// hedgesPerOp reports how many hedges each call started, so a benchmark that
// is meant to fire (or not) shows that it did.
func hedgesPerOp(b *testing.B, p *hedge.Policy, before int64) {
	b.ReportMetric(float64(p.Measured().HedgesStarted-before)/float64(b.N), "hedges/op")
}

func BenchmarkDo(b *testing.B) {
	// direct and goroutine are floors, not competitors: the bare function call,
	// and the one goroutine + channel hand-off that any design which runs the
	// first attempt on its own goroutine must pay.
	b.Run("direct", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			v, _ := answer(ctx)
			sink += v
		}
	})
	b.Run("goroutine", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			ch := make(chan int, 1)
			go func() { v, _ := answer(ctx); ch <- v }()
			sink += <-ch
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("goroutine-timer", func(b *testing.B) {
		// The floor of the timer path: the hand-off above, with a timer armed while the
		// goroutine runs and stopped once it has answered.
		ctx := context.Background()
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			ch := make(chan int, 1)
			go func() { v, _ := yieldOnce(ctx); ch <- v }()
			t := time.AfterFunc(noFireDelay, func() {})
			sink += <-ch
			t.Stop()
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("hedge-no-fire", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		benchDo(b, p, answer, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("quantile-no-fire", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.AtQuantile(0.95)})
		warm(b, p)
		n := p.Measured().HedgesStarted
		benchDo(b, p, answer, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("hedge-no-fire-yield", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		benchDo(b, p, yieldOnce, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("hedge-fires", func(b *testing.B) {
		// Unlimited budget: with the default budget most hedges would be
		// refused and the blocked primary would never answer.
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(fireDelay), Budget: budget.Config{Off: true}})
		n := p.Measured().HedgesStarted
		benchDo(b, p, blockPrimary, 2)
		hedgesPerOp(b, p, n)
	})
	// The same calls through DoInline, which runs the first attempt on the caller's
	// goroutine.
	b.Run("inline-no-fire", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		benchDriver(b, hedge.DoInline[int], p, answer, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("inline-quantile-no-fire", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.AtQuantile(0.95)})
		warm(b, p)
		n := p.Measured().HedgesStarted
		benchDriver(b, hedge.DoInline[int], p, answer, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("inline-no-fire-yield", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		benchDriver(b, hedge.DoInline[int], p, yieldOnce, 1)
		hedgesPerOp(b, p, n)
	})
	b.Run("inline-hedge-fires", func(b *testing.B) {
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(fireDelay), Budget: budget.Config{Off: true}})
		n := p.Measured().HedgesStarted
		benchDriver(b, hedge.DoInline[int], p, blockPrimary, 2)
		hedgesPerOp(b, p, n)
	})
}

// BenchmarkFloor is what the drivers' work is made of, each measured alone, so that
// BenchmarkDo explains itself: the bare function call (what a call costs with no hedging
// layer at all), a goroutine and a channel (the hand-off Do pays to run the first attempt
// on a goroutine of its own), a timer armed and stopped (what any call pays that could be
// hedged: a new one per call, or one reused with Reset, as the drivers do), context.WithCancel
// (what a cancel chain per attempt would cost), and the clock reads a call makes.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := answer(ctx)
			sink += v
		}
	})
	b.Run("goroutine-channel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ch := make(chan int, 1)
			go func() { v, _ := answer(ctx); ch <- v }()
			sink += <-ch
		}
	})
	b.Run("timer-arm-stop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// An hour, not noFireDelay: on a loaded machine the goroutine can be
			// descheduled for 50 ms between arming and stopping.
			t := time.AfterFunc(time.Hour, func() {})
			if !t.Stop() {
				b.Fatal("the timer fired")
			}
		}
	})
	b.Run("timer-reset-stop", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, func() {})
		t.Stop()
		b.ReportAllocs()
		for b.Loop() {
			t.Reset(time.Hour)
			if !t.Stop() {
				b.Fatal("the timer fired")
			}
		}
	})
	b.Run("context-with-cancel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, cancel := context.WithCancel(ctx)
			cancel()
			sink += len(c.Done())
		}
	})
	b.Run("time-now", func(b *testing.B) {
		for b.Loop() {
			sink += time.Now().Nanosecond()
		}
	})
	b.Run("time-since", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			sink += int(time.Since(start))
		}
	})
}

// BenchmarkDoParallel runs the no-fire calls from GOMAXPROCS goroutines at
// GOMAXPROCS 1 and 2 (the procs=N sub-benchmarks), so one run shows whether
// throughput scales: with no global lock, ns/op at procs=2 is below procs=1.
func BenchmarkDoParallel(b *testing.B) {
	cases := []struct {
		name string
		cfg  hedge.Config
	}{
		{"hedge-no-fire", hedge.Config{Trigger: hedge.After(noFireDelay)}},
		{"quantile-no-fire", hedge.Config{Trigger: hedge.AtQuantile(0.95)}},
	}
	for _, procs := range []int{1, 2} {
		// The control: the runtime's own goroutine + channel hand-off.
		b.Run(fmt.Sprintf("goroutine/procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					ch := make(chan int, 1)
					go func() { v, _ := answer(ctx); ch <- v }()
					<-ch
				}
			})
		})
	}
	for _, c := range cases {
		for _, procs := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/procs=%d", c.name, procs), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				p := mustPolicy(b, c.cfg)
				if c.cfg.Trigger == hedge.AtQuantile(0.95) {
					warm(b, p)
				}
				n := p.Measured().HedgesStarted
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						if v, err := hedge.Do(ctx, p, answer); err != nil || v != 1 {
							b.Errorf("Do = %d, %v", v, err)
							return
						}
					}
				})
				hedgesPerOp(b, p, n)
			})
		}
	}
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("failsafe-hedge-no-fire/procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			ex := failsafe.With(hedgepolicy.NewBuilderWithDelay[int](noFireDelay).Build())
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if v, err := ex.Get(fsAnswer); err != nil || v != 1 {
						b.Errorf("Get = %d, %v", v, err)
						return
					}
				}
			})
		})
	}
}

func fsAnswer() (int, error) { return 1, nil }

func fsYieldOnce() (int, error) {
	runtime.Gosched()
	return 1, nil
}

// fsBlockPrimary is blockPrimary for failsafe-go: the first execution waits
// for its cancellation, the hedge answers at once.
func fsBlockPrimary(exec failsafe.Execution[int]) (int, error) {
	if !exec.IsHedge() {
		<-exec.Canceled()
		return 0, exec.Context().Err()
	}
	return 2, nil
}

// BenchmarkFailsafe is failsafe-go's hedge policy with the executor built once,
// outside the loop: its cheapest documented use.
func BenchmarkFailsafe(b *testing.B) {
	b.Run("hedge-no-fire", func(b *testing.B) {
		benchFailsafe(b, failsafe.With(hedgepolicy.NewBuilderWithDelay[int](noFireDelay).Build()), fsAnswer)
	})
	b.Run("hedge-no-fire-yield", func(b *testing.B) {
		benchFailsafe(b, failsafe.With(hedgepolicy.NewBuilderWithDelay[int](noFireDelay).Build()), fsYieldOnce)
	})
	b.Run("quantile-no-fire", func(b *testing.B) {
		// failsafe-go's own quantile delay: p95 of a moving window of 1000
		// executions, hedging after 20.
		ex := failsafe.With(hedgepolicy.NewBuilderWithDelayQuantile[int](0.95, 1000, 20).Build())
		for range 200 {
			ex.Get(fsAnswer)
		}
		benchFailsafe(b, ex, fsAnswer)
	})
	b.Run("hedge-fires", func(b *testing.B) {
		var hedges int
		ex := failsafe.With(hedgepolicy.NewBuilderWithDelay[int](fireDelay).
			OnHedge(func(failsafe.ExecutionEvent[int]) { hedges++ }).Build())
		b.ReportAllocs()
		for b.Loop() {
			v, err := ex.GetWithExecution(fsBlockPrimary)
			if err != nil || v != 2 {
				b.Fatalf("Get = %d, %v; want the hedge's 2", v, err)
			}
			sink += v
		}
		b.ReportMetric(float64(hedges)/float64(b.N), "hedges/op")
	})
}

// benchFailsafe measures ex.Get(fn), which must answer 1.
func benchFailsafe(b *testing.B, ex failsafe.Executor[int], fn func() (int, error)) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		v, err := ex.Get(fn)
		if err != nil || v != 1 {
			b.Fatalf("Get = %d, %v", v, err)
		}
		sink += v
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// hedgeTransport is a minimal HTTP adapter over hedge.DoDetached written here
// for the comparison (the project's adapter, hedgehttp.Transport, does more:
// per-host policies, body buffering, status classification): each attempt
// is the request with the attempt's context, run by hedge.DoDetached; the
// winner's context lives until its body is closed, losers' bodies are closed
// by discard. It handles body-less requests only.
type hedgeTransport struct {
	p    *hedge.Policy
	next http.RoundTripper
}

func (t *hedgeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return detachedRoundTrip(hedge.DoDetached[*http.Response], t.p, t.next, req)
}

// detachedRoundTrip sends req through next under p with driver (hedge.DoDetached or
// hedge.DoInlineDetached), closing every losing body and releasing the winner's attempt when
// its body is closed.
func detachedRoundTrip(driver func(context.Context, *hedge.Policy, func(context.Context) (*http.Response, error), func(*http.Response, error)) (*http.Response, hedge.Hold, error),
	p *hedge.Policy, next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, hold, err := driver(req.Context(), p,
		func(ctx context.Context) (*http.Response, error) {
			return next.RoundTrip(req.WithContext(ctx))
		},
		func(r *http.Response, _ error) {
			if r != nil {
				r.Body.Close()
			}
		})
	if err != nil {
		hold.Release()
		return nil, err
	}
	resp.Body = &holdBody{ReadCloser: resp.Body, hold: hold}
	return resp, nil
}

// inlineTransport is hedgeTransport over hedge.DoInlineDetached: the first
// attempt runs on the caller's goroutine. It is the floor of hedgehttp.Transport,
// which sends its first attempt this way over an *http.Transport: what the core
// costs an HTTP call, before anything of the Transport's own.
type inlineTransport hedgeTransport

func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return detachedRoundTrip(hedge.DoInlineDetached[*http.Response], t.p, t.next, req)
}

// cancelTransport sends each request on a context of its own, cancelled once its
// body is closed: the floor of any transport that can cancel a request it sent
// (a hedge's loser), since net/http then links a context of its own to it.
type cancelTransport struct{ next http.RoundTripper }

func (t cancelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: cancel}
	return resp, nil
}

// goroutineTransport runs each round trip on a new goroutine and waits for it.
type goroutineTransport struct{ next http.RoundTripper }

func (t goroutineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	type answer struct {
		resp *http.Response
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		resp, err := t.next.RoundTrip(req)
		ch <- answer{resp, err}
	}()
	a := <-ch
	return a.resp, a.err
}

type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// holdBody is a winner's body that releases its call's hold once closed.
type holdBody struct {
	io.ReadCloser
	hold hedge.Hold
}

func (b *holdBody) Close() error {
	err := b.ReadCloser.Close()
	b.hold.Release()
	return err
}

func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// BenchmarkHTTP is one GET to a loopback httptest server that answers at once,
// through a plain transport, through hedge.DoDetached (hedgeTransport), through
// the project's hedgehttp.Transport, and through hedgedhttp; the hedge delay (50ms) never expires, so the difference is the
// hedging layer's fast-path cost on top of a real round trip. Floors beside
// them: plain-goroutine (a goroutine hand-off per call), plain-cancel (a request
// context that can be cancelled), hedge-inline (hedge.DoInlineDetached alone,
// which hedgehttp is built on over an *http.Transport).
func BenchmarkHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	run := func(b *testing.B, rt http.RoundTripper) {
		client := &http.Client{Transport: rt}
		get := func() error { return getOK(client, srv.URL) }
		if err := get(); err != nil { // open the connection outside the timing
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if err := get(); err != nil {
				b.Fatal(err)
			}
		}
		// CPU time per request (client and loopback server together): on a shared machine
		// it varies much less than wall time, and a loaded server's throughput follows it.
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("plain", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		run(b, tr)
	})
	b.Run("plain-goroutine", func(b *testing.B) {
		// A floor, not a competitor: the plain transport with each round trip run on a
		// goroutine of its own, as any design that runs attempts on their own goroutines
		// (and can return before a stuck attempt does) must.
		tr := newTransport()
		defer tr.CloseIdleConnections()
		run(b, goroutineTransport{tr})
	})
	b.Run("plain-cancel", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		run(b, cancelTransport{tr})
	})
	b.Run("hedge-inline", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		run(b, &inlineTransport{p: p, next: tr})
		hedgesPerOp(b, p, n)
	})
	b.Run("hedge-detached", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)})
		n := p.Measured().HedgesStarted
		run(b, &hedgeTransport{p: p, next: tr})
		hedgesPerOp(b, p, n)
	})
	b.Run("hedgehttp", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		ht, err := hedgehttp.NewTransport(hedgehttp.Config{
			Policy: hedge.Config{Trigger: hedge.After(noFireDelay)},
			Next:   tr,
		})
		if err != nil {
			b.Fatal(err)
		}
		run(b, ht)
		var hedges int64
		for _, m := range ht.Measured() {
			hedges += m.HedgesStarted
		}
		b.ReportMetric(float64(hedges)/float64(b.N), "hedges/op")
	})
	b.Run("hedgedhttp", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		rt, err := hedgedhttp.NewRoundTripper(noFireDelay, 2, tr)
		if err != nil {
			b.Fatal(err)
		}
		run(b, rt)
	})
}

// BenchmarkRecord is the latency estimator's Record, which every successful
// AtQuantile call pays once (plus once per discarded loser). The latency
// package has the same benchmark; it is repeated here so one run has every
// figure.
func BenchmarkRecord(b *testing.B) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// A fresh estimator per run, so the clock below never goes back to times
	// an earlier run already passed (Record drops samples older than its
	// window, a cheaper path than the one measured).
	newEstimator := func(b *testing.B) *latency.Estimator {
		e, err := latency.New(latency.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	b.Run("serial", func(b *testing.B) {
		e := newEstimator(b)
		b.ReportAllocs()
		var i int64
		for b.Loop() {
			i++
			// 1µs of clock per sample, so slots roll and refreshes run.
			e.Record(base.Add(time.Duration(i)*time.Microsecond), time.Duration(i&1023)*50*time.Microsecond)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		e := newEstimator(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var i int64
			for pb.Next() {
				i++
				e.Record(base.Add(time.Duration(i)*time.Microsecond), time.Duration(i&1023)*50*time.Microsecond)
			}
		})
	})
}

// getOK sends a GET to url through c and reads its body to the end: an error unless the
// answer is 200 and its body reads and closes cleanly.
func getOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return err
}
