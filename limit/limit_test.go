package limit

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

const ms = float64(time.Millisecond)

func mustNew(t testing.TB, cfg Config) *Gradient2 {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func (g *Gradient2) state() (estimate, long float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.estimate, g.long.value
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Success: "success", Dropped: "dropped", Ignored: "ignored", 5: "Outcome(5)"} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	g := mustNew(t, Config{})
	c := g.cfg
	if c.InitialLimit != 20 || c.MinLimit != 20 || c.MaxLimit != 200 || c.Smoothing != 0.2 ||
		c.RTTTolerance != 1.5 || c.LongWindow != 600 || c.QueueSize != 4 {
		t.Fatalf("defaults = %+v", c)
	}
	if g.Limit() != 20 || g.InFlight() != 0 || g.LongRTT() != 0 {
		t.Fatalf("Limit %d InFlight %d LongRTT %v", g.Limit(), g.InFlight(), g.LongRTT())
	}
	// A lone MaxLimit below the default minimum pulls the minimum and the
	// initial limit down with it, and a lone MinLimit above the default
	// maximum pushes the maximum up.
	if g := mustNew(t, Config{MaxLimit: 8}); g.cfg.MinLimit != 8 || g.Limit() != 8 {
		t.Fatalf("MaxLimit 8: %+v", g.cfg)
	}
	if g := mustNew(t, Config{MinLimit: 300}); g.cfg.MaxLimit != 300 || g.Limit() != 300 {
		t.Fatalf("MinLimit 300: %+v", g.cfg)
	}
	if g := mustNew(t, Config{MinLimit: 50}); g.Limit() != 50 {
		t.Fatalf("MinLimit 50: initial limit %d, want 50", g.Limit())
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, Smoothing: 1, RTTTolerance: 1, LongWindow: 1, QueueSize: 1}, ""},
		{Config{InitialLimit: -1}, "Config.InitialLimit"},
		{Config{InitialLimit: 10}, "Config.InitialLimit"}, // below the default MinLimit
		{Config{InitialLimit: 300}, "Config.InitialLimit"},
		{Config{MinLimit: -1}, "Config.MinLimit"},
		{Config{MaxLimit: -1}, "Config.MaxLimit"},
		{Config{MinLimit: 10, MaxLimit: 5}, "Config.MaxLimit"},
		{Config{Smoothing: -0.1}, "Config.Smoothing"},
		{Config{Smoothing: 1.1}, "Config.Smoothing"},
		{Config{Smoothing: math.NaN()}, "Config.Smoothing"},
		{Config{RTTTolerance: 0.9}, "Config.RTTTolerance"},
		{Config{RTTTolerance: -1}, "Config.RTTTolerance"},
		{Config{RTTTolerance: math.NaN()}, "Config.RTTTolerance"},
		{Config{RTTTolerance: math.Inf(1)}, "Config.RTTTolerance"},
		{Config{LongWindow: -1}, "Config.LongWindow"},
		{Config{QueueSize: -1}, "Config.QueueSize"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v", c.cfg, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "limit: "+c.field+" ") {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg, err, c.field)
		}
		if _, err := New(c.cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", c.cfg)
		}
	}
}

// TestHandComputedSequence checks the update rule step by step against
// values worked out by hand. Config: MinLimit 1 so the floor stays out of
// the way; otherwise defaults (initial 20, smoothing 0.2, tolerance 1.5,
// queue 4, long window 600 with a 10-sample plain-mean warm-up).
func TestHandComputedSequence(t *testing.T) {
	g := mustNew(t, Config{MinLimit: 1})
	steps := []struct {
		rtt      float64 // ms
		inflight int
		long     float64 // ms, stored long RTT after the step
		estimate float64
		limit    int
	}{
		// 1. long = 10 (mean of {10}); gradient = min(1, 1.5*10/10) = 1
		//    next = 20*1 + 4 = 24; estimate = 20*0.8 + 24*0.2 = 20.8 → 20
		{10, 20, 10, 20.8, 20},
		// 2. long = 10; gradient 1; next = 24.8
		//    estimate = 20.8*0.8 + 24.8*0.2 = 16.64 + 4.96 = 21.6 → 21
		{10, 20, 10, 21.6, 21},
		// 3. long = (10+10+40)/3 = 20; long/short = 0.5, no decay
		//    gradient = max(0.5, 1.5*20/40 = 0.75) = 0.75
		//    next = 21.6*0.75 + 4 = 20.2
		//    estimate = 21.6*0.8 + 20.2*0.2 = 17.28 + 4.04 = 21.32 → 21
		{40, 21, 20, 21.32, 21},
		// 4. long = 160/4 = 40; gradient = 1.5*40/100 = 0.6
		//    next = 21.32*0.6 + 4 = 16.792
		//    estimate = 21.32*0.8 + 16.792*0.2 = 17.056 + 3.3584 = 20.4144 → 20
		{100, 21, 40, 20.4144, 20},
		// 5. long = 165/5 = 33; 33/5 > 2, so the stored long is decayed to
		//    33*0.95 = 31.35. inflight 5 < 20.4144/2: application-limited,
		//    no change.
		{5, 5, 31.35, 20.4144, 20},
		// 6. Still warming up, so the mean is recomputed from the sum and
		//    the decay above is forgotten: long = 170/6 = 28.333...; decayed
		//    again to 26.91666... for the future, but this step uses 28.333:
		//    gradient = min(1, 1.5*28.333/5) = 1; next = 24.4144
		//    estimate = 20.4144*0.8 + 24.4144*0.2 = 16.33152 + 4.88288 = 21.2144 → 21
		{5, 20, 170.0 / 6 * 0.95, 21.2144, 21},
	}
	for i, s := range steps {
		g.sample(t0, time.Duration(s.rtt*ms), s.inflight)
		est, long := g.state()
		if !near(est, s.estimate) || !near(long, s.long*ms) || g.Limit() != s.limit {
			t.Fatalf("step %d: estimate %v long %vms limit %d; want %v, %vms, %d",
				i+1, est, long/ms, g.Limit(), s.estimate, s.long, s.limit)
		}
	}
}

// TestShrinksToMinimum: a latency spike at full load takes the limit down
// by at most half a step at a time, never below MinLimit.
func TestShrinksToMinimum(t *testing.T) {
	g := mustNew(t, Config{InitialLimit: 100, MinLimit: 60, MaxLimit: 100})
	// 1. long = 10; gradient 1; next = 104; estimate = 80 + 20.8 = 100.8 → clamped 100
	// 2. long = (10+1000)/2 = 505; gradient = max(0.5, 1.5*505/1000 = 0.7575) = 0.7575
	//    next = 75.75 + 4 = 79.75; estimate = 80 + 15.95 = 95.95 → 95
	// 3. long = 11010/3 = 3670; gradient = max(0.5, 1.5*3670/10000 = 0.5505) = 0.5505
	//    next = 95.95*0.5505 + 4 = 56.820475; estimate = 76.76 + 11.364095 = 88.124095 → 88
	// 4. long = 31010/4 = 7752.5; gradient = max(0.5, 1.5*7752.5/20000 = 0.5814375)
	//    next = 88.124095*0.5814375 + 4 = 55.2386...
	//    estimate = 70.499276 + 11.04773... = 81.54700... → 81
	// 5. with rtt 100s the gradient floor of 0.5 holds: long = 131010/5 = 26202,
	//    1.5*26202/100000 = 0.393 → 0.5; next = 81.547*0.5 + 4 = 44.7735...
	//    estimate = 65.2376 + 8.9547 = 74.1923... → 74
	want := []struct {
		rtt   float64
		est   float64
		limit int
	}{{10, 100, 100}, {1000, 95.95, 95}, {10000, 88.124095, 88},
		{20000, 88.124095*0.8 + (88.124095*0.5814375+4)*0.2, 81},
		{100000, 0.8*(88.124095*0.8+(88.124095*0.5814375+4)*0.2) + 0.2*(0.5*(88.124095*0.8+(88.124095*0.5814375+4)*0.2)+4), 74}}
	for i, w := range want {
		g.sample(t0, time.Duration(w.rtt*ms), 100)
		if est, _ := g.state(); !near(est, w.est) || g.Limit() != w.limit {
			t.Fatalf("step %d: estimate %v limit %d; want %v, %d", i+1, est, g.Limit(), w.est, w.limit)
		}
	}
	// Latency that keeps climbing keeps the gradient at its floor of 0.5:
	// estimate → 0.9*estimate + 0.8 each step: 67.57, 61.6, then 60 (clamped).
	rtt := 100 * time.Second
	for i, want := range []int{67, 61, 60, 60} {
		rtt = rtt * 3 / 2
		g.sample(t0, rtt, 100)
		if g.Limit() != want {
			t.Fatalf("overload step %d: limit %d, want %d", i+1, g.Limit(), want)
		}
	}
}

func TestWarmupThenExponentialAverage(t *testing.T) {
	// LongWindow 9 gives a factor of 2/(9+1) = 0.2, easy to follow by hand.
	g := mustNew(t, Config{LongWindow: 9})
	// Warm-up: the first ten samples are averaged plainly.
	for i := 1; i <= 10; i++ {
		g.sample(t0, time.Duration(float64(i)*20*ms), 0) // 20, 40, ..., 200 ms
		_, long := g.state()
		want := float64(i+1) * 10 * ms // mean of 20..20i = 10(i+1)
		if !near(long, want) {
			t.Fatalf("warm-up sample %d: long %vms, want %vms", i, long/ms, want/ms)
		}
	}
	// long = 110ms after warm-up. Then exponential, factor 0.2:
	// 11. 110*0.8 + 100*0.2 = 108; 108/100 <= 2, no decay
	// 12. 108*0.8 + 50*0.2 = 96.4; 96.4/50 <= 2, no decay
	// 13. 96.4*0.8 + 20*0.2 = 81.12; 81.12/20 > 2 → 77.064
	// 14. 77.064*0.8 + 20*0.2 = 65.6512 > 40 → 62.36864
	for i, s := range []struct{ rtt, long float64 }{{100, 108}, {50, 96.4}, {20, 77.064}, {20, 62.36864}} {
		g.sample(t0, time.Duration(s.rtt*ms), 0)
		if _, long := g.state(); !near(long, s.long*ms) {
			t.Fatalf("sample %d: long %vms, want %vms", 11+i, long/ms, s.long)
		}
	}
	if got := g.LongRTT(); math.Abs(float64(got)-62.36864*ms) > 1 {
		t.Fatalf("LongRTT = %v", got)
	}
}

func TestFastRecoveryDecay(t *testing.T) {
	g := mustNew(t, Config{})
	for range 10 {
		g.sample(t0, 100*time.Millisecond, 0)
	}
	// Default factor 2/601. First 10ms sample:
	// long = 100*599/601 + 10*2/601 = 59920/601 = 99.7004991...ms;
	// 99.7/10 > 2, so it is decayed to 59920/601*0.95 = 94.7154742...ms.
	g.sample(t0, 10*time.Millisecond, 0)
	if _, long := g.state(); !near(long, 59920.0/601*0.95*ms) {
		t.Fatalf("long after first fast sample = %vms, want %vms", long/ms, 59920.0/601*0.95)
	}
	// Without the decay the long average would need ~480 samples to get
	// within 2x of 10ms; with it, about 30. Then the decay stops and the
	// average creeps on towards 10ms.
	steps := 1
	for ; steps < 100; steps++ {
		if _, long := g.state(); long <= 20*ms {
			break
		}
		g.sample(t0, 10*time.Millisecond, 0)
	}
	if steps < 25 || steps > 35 {
		t.Fatalf("long RTT took %d samples to come within 2x, want ~30", steps)
	}
	_, before := g.state()
	for range 20 {
		g.sample(t0, 10*time.Millisecond, 0)
	}
	_, after := g.state()
	if !(after < before && after > 10*ms && after > before*0.95) {
		t.Fatalf("after recovery long went %vms -> %vms; want a slow exponential drift", before/ms, after/ms)
	}
}

func TestApplicationLimitedNoChange(t *testing.T) {
	var changes []int
	g := mustNew(t, Config{OnLimitChange: func(_, n int, _ time.Time) { changes = append(changes, n) }})
	// estimate 20: inflight below 10 is application-limited, whatever the RTT.
	for i, rtt := range []time.Duration{time.Millisecond, time.Second, time.Millisecond} {
		g.sample(t0, rtt, 9)
		if est, _ := g.state(); est != 20 || g.Limit() != 20 {
			t.Fatalf("sample %d at inflight 9: estimate %v limit %d, want 20", i, est, g.Limit())
		}
	}
	// At exactly half it is not: long = (1+1000+1+1)/4 = 250.75ms, gradient 1,
	// estimate = 16 + 24*0.2 = 20.8.
	g.sample(t0, time.Millisecond, 10)
	if est, _ := g.state(); !near(est, 20.8) {
		t.Fatalf("estimate at inflight 10 = %v, want 20.8", est)
	}
	if len(changes) != 0 {
		t.Fatalf("OnLimitChange called %v while the integer limit stayed 20", changes)
	}
}

func TestAcquireRefusesAtLimit(t *testing.T) {
	g := mustNew(t, Config{})
	var ps []Permit
	for i := range 20 {
		p, ok := g.Acquire(t0)
		if !ok {
			t.Fatalf("permit %d refused below the limit", i)
		}
		if p.inflight != i+1 {
			t.Fatalf("permit %d records inflight %d, want %d", i, p.inflight, i+1)
		}
		ps = append(ps, p)
	}
	if _, ok := g.Acquire(t0); ok {
		t.Fatal("permit granted at the limit")
	}
	if g.InFlight() != 20 {
		t.Fatalf("InFlight = %d", g.InFlight())
	}
	// Ignored frees the permit and feeds nothing.
	g.Release(t0.Add(time.Second), ps[19], Ignored)
	if g.InFlight() != 19 || g.Limit() != 20 || g.LongRTT() != 0 {
		t.Fatalf("after Ignored: InFlight %d Limit %d LongRTT %v", g.InFlight(), g.Limit(), g.LongRTT())
	}
	if est, _ := g.state(); est != 20 {
		t.Fatalf("estimate changed on Ignored: %v", est)
	}
	if _, ok := g.Acquire(t0); !ok {
		t.Fatal("freed permit not granted")
	}
	// The zero Permit and a refused one release nothing.
	g.Release(t0, Permit{}, Success)
	if g.InFlight() != 20 {
		t.Fatalf("zero Permit release changed InFlight to %d", g.InFlight())
	}
}

func TestReleaseFeedsSample(t *testing.T) {
	for _, o := range []Outcome{Success, Dropped} {
		var got [][2]int
		g := mustNew(t, Config{MinLimit: 1, OnLimitChange: func(old, n int, now time.Time) {
			if !now.Equal(t0.Add(50 * time.Millisecond)) {
				t.Errorf("OnLimitChange at %v", now)
			}
			got = append(got, [2]int{old, n})
		}})
		var ps []Permit
		for range 20 {
			p, _ := g.Acquire(t0)
			ps = append(ps, p)
		}
		// The first permit was taken at inflight 1: application-limited.
		g.Release(t0.Add(50*time.Millisecond), ps[0], o)
		if est, _ := g.state(); est != 20 || g.LongRTT() != 50*time.Millisecond {
			t.Fatalf("%v: estimate %v LongRTT %v", o, est, g.LongRTT())
		}
		// The last at inflight 20: rtt 50ms, long 50ms → 20.8, limit still 20.
		g.Release(t0.Add(50*time.Millisecond), ps[19], o)
		// And again: 21.6 → 21.
		g.Release(t0.Add(50*time.Millisecond), ps[18], o)
		if g.Limit() != 21 || g.InFlight() != 17 {
			t.Fatalf("%v: Limit %d InFlight %d, want 21, 17", o, g.Limit(), g.InFlight())
		}
		if len(got) != 1 || got[0] != [2]int{20, 21} {
			t.Fatalf("%v: OnLimitChange calls %v, want [[20 21]]", o, got)
		}
	}
}

func TestZeroRTT(t *testing.T) {
	// On a virtual clock a call can take no time at all.
	g := mustNew(t, Config{MinLimit: 1})
	for range 30 {
		p, _ := g.Acquire(t0)
		g.Release(t0, p, Success)
		g.sample(t0, 0, 20)
	}
	if est, _ := g.state(); math.IsNaN(est) || g.Limit() < 1 || g.Limit() > 200 {
		t.Fatalf("estimate %v limit %d after zero RTTs", est, g.Limit())
	}
	if g.Limit() <= 20 {
		t.Fatalf("limit %d: zero RTTs show no queuing, the limit should grow", g.Limit())
	}
}

func TestPropertyLimitWithinBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		lo := 1 + r.IntN(50)
		hi := lo + r.IntN(300)
		cfg := Config{
			MinLimit: lo, MaxLimit: hi, InitialLimit: lo + r.IntN(hi-lo+1),
			Smoothing: 0.01 + 0.99*r.Float64(), RTTTolerance: 1 + 3*r.Float64(),
			LongWindow: 1 + r.IntN(1000), QueueSize: 1 + r.IntN(20),
		}
		g := mustNew(t, cfg)
		for i := range 500 {
			var rtt time.Duration
			switch r.IntN(4) {
			case 0:
				rtt = time.Duration(r.Int64N(int64(time.Millisecond)))
			case 1:
				rtt = time.Duration(r.Int64N(int64(10 * time.Second)))
			case 2:
				rtt = time.Duration(r.NormFloat64()*float64(time.Millisecond)) + 20*time.Millisecond
			default:
				rtt = -time.Duration(r.Int64N(1000))
			}
			g.sample(t0, rtt, r.IntN(2*hi+1))
			l := g.Limit()
			if est, long := g.state(); l < lo || l > hi || est < float64(lo) || est > float64(hi) || math.IsNaN(long) || long <= 0 {
				t.Fatalf("trial %d step %d (%+v): limit %d estimate %v long %v", trial, i, cfg, l, est, long)
			}
		}
	}
}

func TestConcurrent(t *testing.T) {
	g := mustNew(t, Config{MinLimit: 4, InitialLimit: 10, MaxLimit: 50})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range 3000 {
				now := t0.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
				p, ok := g.Acquire(now)
				if !ok {
					continue
				}
				if n := g.InFlight(); n > 50 {
					t.Errorf("InFlight %d above MaxLimit", n)
				}
				g.Release(now.Add(time.Duration(r.IntN(100))*time.Millisecond), p, Outcome(r.IntN(3)))
			}
		})
	}
	wg.Wait()
	if g.InFlight() != 0 {
		t.Fatalf("InFlight = %d after every permit was released", g.InFlight())
	}
	if l := g.Limit(); l < 4 || l > 50 {
		t.Fatalf("Limit = %d", l)
	}
}

func FuzzConfig(f *testing.F) {
	f.Add(0, 0, 0, 0.0, 0.0, 0, 0, int64(1e6), 10)
	f.Add(5, 1, 9, 1.0, 1.0, 1, 1, int64(0), 9)
	f.Add(-1, 3, 2, 0.5, 0.9, 3, 2, int64(-5), 0)
	f.Fuzz(func(t *testing.T, initial, lo, hi int, smoothing, tol float64, window, queue int, rtt int64, inflight int) {
		cfg := Config{InitialLimit: initial, MinLimit: lo, MaxLimit: hi, Smoothing: smoothing,
			RTTTolerance: tol, LongWindow: window, QueueSize: queue}
		g, err := New(cfg)
		if err != nil {
			if cfg.Validate() == nil {
				t.Fatalf("New failed, Validate passed: %v", err)
			}
			return
		}
		c := g.cfg
		if c.MinLimit < 1 || c.MaxLimit < c.MinLimit || g.Limit() < c.MinLimit || g.Limit() > c.MaxLimit {
			t.Fatalf("after defaults %+v, limit %d", c, g.Limit())
		}
		for i := range 50 {
			g.sample(t0, time.Duration(rtt)*time.Duration(i%3+1), inflight)
			if l := g.Limit(); l < c.MinLimit || l > c.MaxLimit {
				t.Fatalf("limit %d outside [%d, %d]", l, c.MinLimit, c.MaxLimit)
			}
		}
		p, ok := g.Acquire(t0)
		if !ok {
			t.Fatal("first Acquire refused")
		}
		g.Release(t0.Add(time.Duration(rtt)), p, Dropped)
		if g.InFlight() != 0 {
			t.Fatalf("InFlight = %d", g.InFlight())
		}
	})
}
