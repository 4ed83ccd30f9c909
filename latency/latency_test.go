package latency

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, cfg Config) *Estimator {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// exactQuantile is the oracle: the nearest-rank q-quantile of the samples.
func exactQuantile(samples []time.Duration, q float64) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string // substring of the error; "" means valid
	}{
		{Config{}, ""},
		{Config{Quantile: 0.5, Window: time.Millisecond, MinimumSamples: 1}, ""},
		{Config{Quantile: 0.999, Window: time.Hour, MinimumSamples: 1000}, ""},
		{Config{Quantile: 0.4}, "Config.Quantile must be in [0.5, 1), got 0.4"},
		{Config{Quantile: 1}, "Config.Quantile must be in [0.5, 1), got 1"},
		{Config{Quantile: -0.9}, "Config.Quantile"},
		{Config{Quantile: math.NaN()}, "Config.Quantile"},
		{Config{Quantile: math.Inf(1)}, "Config.Quantile"},
		{Config{Window: -time.Second}, "Config.Window must be >= 0, got -1s"},
		{Config{Window: time.Microsecond}, "Config.Window must be 0 (default 30s) or at least 1ms, got 1µs"},
		{Config{MinimumSamples: -1}, "Config.MinimumSamples must be >= 0, got -1"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		_, newErr := New(tt.cfg)
		if tt.want == "" {
			if err != nil || newErr != nil {
				t.Errorf("%+v: Validate = %v, New = %v; want nil", tt.cfg, err, newErr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "latency: ") {
			t.Errorf("%+v: Validate = %v; want latency: ...%s", tt.cfg, err, tt.want)
		}
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(newErr, ErrInvalidConfig) {
			t.Errorf("%+v: errors do not wrap ErrInvalidConfig: %v, %v", tt.cfg, err, newErr)
		}
	}
}

func TestDefaults(t *testing.T) {
	e := mustNew(t, Config{})
	want := Config{Quantile: 0.95, Window: 30 * time.Second, MinimumSamples: 20}
	if got := e.Config(); got != want {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
}

func TestBuckets(t *testing.T) {
	// Every value between the edges falls in a bucket whose bounds contain
	// it, and the bucket is at most 1/16 of its lower bound wide.
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		d := minValue + time.Duration(r.Int64N(int64(maxValue-minValue)))
		b := bucketOf(d)
		lower, width := bucketBounds(b)
		if float64(d) < lower || float64(d) >= lower+width {
			t.Fatalf("bucketOf(%d) = %d with bounds [%v, %v)", d, b, lower, lower+width)
		}
		if width > lower/16 {
			t.Fatalf("bucket %d too wide: %v at %v", b, width, lower)
		}
	}
	// Buckets are contiguous.
	for b := 1; b < numBuckets; b++ {
		pl, pw := bucketBounds(b - 1)
		l, _ := bucketBounds(b)
		if pl+pw != l {
			t.Fatalf("gap between bucket %d and %d: %v != %v", b-1, b, pl+pw, l)
		}
	}
	for _, d := range []time.Duration{math.MinInt64, -1, 0, 1, minValue - 1} {
		if b := bucketOf(d); b != 0 {
			t.Errorf("bucketOf(%d) = %d, want 0", d, b)
		}
	}
	for _, d := range []time.Duration{maxValue, maxValue + 1, math.MaxInt64} {
		if b := bucketOf(d); b != numBuckets-1 {
			t.Errorf("bucketOf(%d) = %d, want %d", d, b, numBuckets-1)
		}
	}
}

func TestAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logNormal := func() time.Duration {
		// median 10ms, sigma 1: p99 around 100ms.
		return time.Duration(float64(10*time.Millisecond) * math.Exp(r.NormFloat64()))
	}
	bimodal := func() time.Duration {
		// 85% fast around 2ms, 15% slow around 80ms: a cache miss or a slow replica.
		if r.Float64() < 0.85 {
			return time.Duration(float64(2*time.Millisecond) * math.Exp(0.2*r.NormFloat64()))
		}
		return time.Duration(float64(80*time.Millisecond) * math.Exp(0.3*r.NormFloat64()))
	}
	uniformWide := func() time.Duration {
		return time.Duration(r.Int64N(int64(time.Second))) + 10*time.Microsecond
	}
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{{"lognormal", logNormal}, {"bimodal", bimodal}, {"uniform", uniformWide}} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustNew(t, Config{Quantile: 0.95})
			samples := make([]time.Duration, 20000)
			for i := range samples {
				samples[i] = tc.gen()
				// Spread over 20s of a 30s window, so several slots are summed.
				e.Record(base.Add(time.Duration(i)*time.Millisecond), samples[i])
			}
			now := base.Add(20 * time.Second)
			if n := e.Count(now); n != len(samples) {
				t.Fatalf("Count = %d, want %d", n, len(samples))
			}
			for _, q := range []float64{0.5, 0.75, 0.9, 0.95, 0.99, 0.999} {
				got, ok := e.Quantile(now, q)
				want := exactQuantile(samples, q)
				if !ok {
					t.Fatalf("Quantile(%v) not ok", q)
				}
				if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.05 {
					t.Errorf("q=%v: got %v, exact %v, relative error %.3f > 0.05", q, got, want, rel)
				}
			}
			e.Refresh(now)
			th, ok := e.Threshold()
			want := exactQuantile(samples, 0.95)
			if !ok || math.Abs(float64(th-want))/float64(want) > 0.05 {
				t.Errorf("Threshold = %v, %v; exact p95 %v", th, ok, want)
			}
		})
	}
}

func TestWarmUpAtExactlyMinimumSamples(t *testing.T) {
	e := mustNew(t, Config{MinimumSamples: 20})
	if d, ok := e.Threshold(); ok || d != 0 {
		t.Fatalf("fresh Threshold = %v, %v; want 0, false", d, ok)
	}
	for i := range 19 {
		e.Record(base.Add(time.Duration(i)*time.Millisecond), 10*time.Millisecond)
		if _, ok := e.Threshold(); ok {
			t.Fatalf("warm after %d samples", i+1)
		}
	}
	now := base.Add(19 * time.Millisecond)
	if _, ok := e.Quantile(now, 0.95); ok {
		t.Fatal("Quantile ok with 19 samples")
	}
	e.Record(now, 10*time.Millisecond)
	d, ok := e.Threshold()
	if !ok {
		t.Fatal("not warm after the 20th sample")
	}
	if math.Abs(float64(d-10*time.Millisecond)) > float64(10*time.Millisecond)/16 {
		t.Errorf("Threshold = %v, want about 10ms", d)
	}
	if _, ok := e.Quantile(now, 0.95); !ok {
		t.Error("Quantile not ok with 20 samples")
	}
}

func TestWindowExpiry(t *testing.T) {
	const window = 16 * time.Second // one slot per second
	e := mustNew(t, Config{Window: window, MinimumSamples: 5})
	for range 10 {
		e.Record(base, time.Millisecond) // fast samples at base
	}
	t1 := base.Add(8 * time.Second)
	for range 10 {
		e.Record(t1, 100*time.Millisecond) // slow samples later
	}
	if n := e.Count(t1); n != 20 {
		t.Fatalf("Count at t1 = %d, want 20", n)
	}
	if d, _ := e.Quantile(t1, 0.25); d > 2*time.Millisecond {
		t.Fatalf("p25 with both groups = %v, want about 1ms", d)
	}
	// Just before Window has passed since base, the first group still counts.
	if n := e.Count(base.Add(window - time.Nanosecond)); n != 20 {
		t.Errorf("Count just before Window = %d, want 20", n)
	}
	// Once Window has passed since base, it does not.
	at := base.Add(window)
	if n := e.Count(at); n != 10 {
		t.Errorf("Count at Window = %d, want 10", n)
	}
	if d, ok := e.Quantile(at, 0.25); !ok || d < 90*time.Millisecond {
		t.Errorf("p25 after expiry = %v, %v; want about 100ms, true", d, ok)
	}
	// Past both groups, the window is empty and the threshold goes cold.
	late := t1.Add(window)
	if n := e.Count(late); n != 0 {
		t.Errorf("Count after both expired = %d", n)
	}
	if _, ok := e.Quantile(late, 0.5); ok {
		t.Error("Quantile ok on an empty window")
	}
	e.Refresh(late)
	if d, ok := e.Threshold(); ok || d != 0 {
		t.Errorf("Threshold after Refresh on empty window = %v, %v", d, ok)
	}
	// A sample reported for a time the slot has already moved past is
	// dropped rather than mixed into the newer slot.
	e.Record(late, time.Second)
	e.Record(late.Add(-window), time.Millisecond)
	if n := e.Count(late); n != 1 {
		t.Errorf("Count after a late sample = %d, want 1", n)
	}
}

func TestRecordRefreshesOnSchedule(t *testing.T) {
	const window = 64 * time.Second // refresh every second
	e := mustNew(t, Config{Window: window, MinimumSamples: 1, Quantile: 0.5})
	e.Record(base, 10*time.Millisecond)
	d0, ok := e.Threshold()
	if !ok {
		t.Fatal("not warm with MinimumSamples 1")
	}
	// Within the refresh interval, new samples do not move the cached value.
	for range 100 {
		e.Record(base.Add(500*time.Millisecond), time.Second)
	}
	if d, _ := e.Threshold(); d != d0 {
		t.Fatalf("Threshold moved before the refresh time: %v -> %v", d0, d)
	}
	// The first sample after the interval refreshes it.
	e.Record(base.Add(time.Second), time.Second)
	if d, _ := e.Threshold(); d < 900*time.Millisecond {
		t.Fatalf("Threshold after refresh time = %v, want about 1s", d)
	}
}

func TestQuantileMonotoneAndEdges(t *testing.T) {
	e := mustNew(t, Config{MinimumSamples: 1})
	if d, ok := e.Quantile(base, 0.5); ok || d != 0 {
		t.Errorf("Quantile before any sample = %v, %v", d, ok)
	}
	if n := e.Count(base); n != 0 {
		t.Errorf("Count before any sample = %d", n)
	}
	for _, d := range []time.Duration{-5, 0, time.Microsecond, time.Millisecond, time.Hour} {
		e.Record(base, d)
	}
	lo, _ := e.Quantile(base, 0)
	if lo != minValue {
		t.Errorf("Quantile(0) = %v, want %v (tiny samples clamp up)", lo, minValue)
	}
	hi, _ := e.Quantile(base, 1)
	if hi != maxValue {
		t.Errorf("Quantile(1) = %v, want %v (huge samples clamp down)", hi, maxValue)
	}
	if d, _ := e.Quantile(base, -3); d != lo {
		t.Errorf("Quantile(-3) = %v, want Quantile(0)", d)
	}
	if d, _ := e.Quantile(base, 7); d != hi {
		t.Errorf("Quantile(7) = %v, want Quantile(1)", d)
	}
	if _, ok := e.Quantile(base, math.NaN()); ok {
		t.Error("Quantile(NaN) ok")
	}
	prev := time.Duration(0)
	for q := 0.0; q <= 1; q += 0.001 {
		d, _ := e.Quantile(base, q)
		if d < prev {
			t.Fatalf("Quantile not monotone at %v: %v < %v", q, d, prev)
		}
		prev = d
	}
}

func TestConcurrentRecord(t *testing.T) {
	const goroutines, each = 16, 2000
	e := mustNew(t, Config{Window: 10 * time.Second})
	// One sample first, so the slot is claimed before the race; after that
	// no sample can be lost and the count must be exact.
	e.Record(base, time.Millisecond)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e.Record(base.Add(time.Duration(i)), time.Duration(g+1)*time.Millisecond)
				if i%64 == 0 {
					e.Threshold()
				}
			}
		})
	}
	wg.Wait()
	if n := e.Count(base); n != goroutines*each+1 {
		t.Errorf("Count = %d, want %d", n, goroutines*each+1)
	}
	e.Refresh(base)
	d, ok := e.Threshold()
	// p95 of uniform 1..16ms plus one 1ms sample is about 16ms.
	if !ok || d < 14*time.Millisecond || d > 17*time.Millisecond {
		t.Errorf("Threshold = %v, %v; want about 16ms", d, ok)
	}
}

func TestConcurrentAcrossSlots(t *testing.T) {
	// Goroutines move through many slot boundaries at once; samples may be
	// lost while a slot is reset, but never invented, and nothing races.
	// They meet every 500 records (5 slots), so that none falls a whole
	// window behind the others: samples that far behind for a whole window
	// are a clock stepped back, and the window would move back to them.
	const goroutines, each, phase = 8, 5000, 500
	e := mustNew(t, Config{Window: 160 * time.Millisecond, MinimumSamples: 1})
	var wg sync.WaitGroup
	var meet [each / phase]sync.WaitGroup
	for i := range meet {
		meet[i].Add(goroutines)
	}
	for range goroutines {
		wg.Go(func() {
			for i := range each {
				if i > 0 && i%phase == 0 {
					meet[i/phase-1].Done()
					meet[i/phase-1].Wait()
				}
				now := base.Add(time.Duration(i) * 100 * time.Microsecond)
				e.Record(now, time.Millisecond)
				e.Threshold()
				if i%500 == 0 {
					e.Count(now)
					e.Quantile(now, 0.9)
				}
			}
		})
	}
	wg.Wait()
	end := base.Add(each * 100 * time.Microsecond)
	// The window at end holds the last 15 slots of 10ms, 100 records per
	// slot per goroutine. Resets racing with recorders lose some (more
	// under the race detector, which slows the reset loop down). These
	// goroutines run up to 5 slots apart, so when a slot rolls over,
	// each of the others may have one older sample in flight that lands in
	// the new epoch: at most (goroutines-1) per slot, 15 slots.
	slack := (goroutines - 1) * 15
	if n := e.Count(end); n > goroutines*1500+slack || n < goroutines*1500/2 {
		t.Errorf("Count at end = %d, want at most %d+%d and not much less", n, goroutines*1500, slack)
	}
	if d, ok := e.Threshold(); !ok || d < 900*time.Microsecond || d > 1100*time.Microsecond {
		t.Errorf("Threshold = %v, %v; want about 1ms", d, ok)
	}
}

func TestZeroEstimatorPanics(t *testing.T) {
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.HasPrefix(s, "latency: ") {
			t.Errorf("recover() = %v, want a latency: panic", r)
		}
	}()
	var e Estimator
	e.Record(base, time.Millisecond)
}

func TestRecordAllocs(t *testing.T) {
	e := mustNew(t, Config{})
	e.Record(base, time.Millisecond)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		e.Record(base.Add(time.Duration(i)*time.Millisecond), time.Duration(i)*time.Microsecond)
		e.Threshold()
	})
	if allocs != 0 {
		t.Errorf("Record+Threshold allocate %v times, want 0", allocs)
	}
}

func FuzzEstimator(f *testing.F) {
	f.Add(int64(0), int64(time.Millisecond), int64(0), int64(-1), int64(math.MaxInt64), 0.95, uint8(20))
	f.Add(int64(-1), int64(math.MinInt64), int64(time.Hour), int64(1), int64(1<<40), 0.5, uint8(1))
	f.Fuzz(func(t *testing.T, step, d0, d1, d2, d3 int64, q float64, minSamples uint8) {
		e, err := New(Config{Window: time.Second, MinimumSamples: int(minSamples)})
		if err != nil {
			t.Fatal(err)
		}
		ds := []time.Duration{time.Duration(d0), time.Duration(d1), time.Duration(d2), time.Duration(d3)}
		now := base
		for i := range 64 {
			e.Record(now, ds[i%len(ds)])
			// Steps can go backwards and jump far.
			now = now.Add(time.Duration(step) * time.Duration(i%5-1))
		}
		e.Refresh(now)
		th, _ := e.Threshold()
		if th < 0 || th > maxValue {
			t.Fatalf("Threshold %v out of range", th)
		}
		prev := time.Duration(-1)
		qs := []float64{-1, 0, 0.1, 0.5, 0.9, 0.99, 1, 2}
		if !math.IsNaN(q) {
			qs = append(qs, q)
			slices.Sort(qs)
		}
		for _, qq := range qs {
			d, _ := e.Quantile(now, qq)
			if d < prev {
				t.Fatalf("Quantile not monotone: q=%v gives %v < %v", qq, d, prev)
			}
			if e.Count(now) > 0 && (d < minValue || d > maxValue) {
				t.Fatalf("Quantile(%v) = %v outside [%v, %v]", qq, d, minValue, maxValue)
			}
			prev = d
		}
		if n := e.Count(now); n < 0 || n > 64 {
			t.Fatalf("Count = %d", n)
		}
	})
}

func FuzzConfig(f *testing.F) {
	f.Add(0.95, int64(0), 0)
	f.Add(0.5, int64(time.Millisecond), 1)
	f.Add(1.0, int64(-1), -1)
	f.Fuzz(func(t *testing.T, q float64, window int64, minSamples int) {
		cfg := Config{Quantile: q, Window: time.Duration(window), MinimumSamples: minSamples}
		e, err := New(cfg)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "latency: Config.") {
				t.Fatalf("New(%+v) error %q", cfg, err)
			}
			return
		}
		c := e.Config()
		if !(c.Quantile >= 0.5 && c.Quantile < 1) || c.Window < MinimumWindow || c.MinimumSamples < 1 {
			t.Fatalf("New(%+v) accepted, resolved to %+v", cfg, c)
		}
		e.Record(base, time.Millisecond)
		e.Record(base.Add(c.Window), time.Millisecond)
		if n := e.Count(base.Add(c.Window)); n != 1 {
			t.Fatalf("Count after Window = %d, want 1", n)
		}
	})
}

func BenchmarkRecord(b *testing.B) {
	e := mustNew(b, Config{})
	e.Record(base, time.Millisecond)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		// Time moves 1µs per sample, so slots roll and refreshes run at
		// their real rate.
		e.Record(base.Add(time.Duration(i)*time.Microsecond), time.Duration(i&1023)*50*time.Microsecond)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	e := mustNew(b, Config{})
	e.Record(base, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			i++
			e.Record(base.Add(time.Duration(i)*time.Microsecond), time.Duration(i&1023)*50*time.Microsecond)
		}
	})
}

func BenchmarkThreshold(b *testing.B) {
	e := mustNew(b, Config{MinimumSamples: 1})
	e.Record(base, time.Millisecond)
	b.ReportAllocs()
	var sink time.Duration
	for b.Loop() {
		d, _ := e.Threshold()
		sink += d
	}
	_ = sink
}

func BenchmarkQuantile(b *testing.B) {
	e := mustNew(b, Config{})
	for i := range 10000 {
		e.Record(base.Add(time.Duration(i)*time.Millisecond), time.Duration(i)*time.Microsecond)
	}
	now := base.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		e.Quantile(now, 0.99)
	}
}
