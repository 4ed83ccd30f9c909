package winrate

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// With the default Window of 1 minute a decision period is 15s.
const period = 15 * time.Second

func at(d time.Duration) time.Time { return t0.Add(d) }

func mustNew(t testing.TB, cfg Config) *Loop {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// feed records started hedges, of which won win, spread over period p
// (0-based), without going through Admit.
func feed(l *Loop, p int, started, won int) {
	base := time.Duration(p) * period
	for i := range started {
		l.Started(at(base + time.Duration(i)*time.Millisecond))
	}
	for i := range won {
		l.Won(at(base + time.Duration(i)*time.Millisecond + time.Second))
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{Floor: 1, Window: 4, MinimumSamples: 1, MinimumAllowance: 1}, ""},
		{Config{Floor: -0.1}, "Config.Floor"},
		{Config{Floor: 1.5}, "Config.Floor"},
		{Config{Floor: math.NaN()}, "Config.Floor"},
		{Config{Window: -time.Second}, "Config.Window"},
		{Config{Window: 3}, "Config.Window"},
		{Config{MinimumSamples: -1}, "Config.MinimumSamples"},
		{Config{MinimumAllowance: -0.5}, "Config.MinimumAllowance"},
		{Config{MinimumAllowance: 2}, "Config.MinimumAllowance"},
		{Config{MinimumAllowance: math.NaN()}, "Config.MinimumAllowance"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v", c.cfg, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "winrate: "+c.field+" ") {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg, err, c.field)
		}
		if _, err := New(c.cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", c.cfg)
		}
	}
	l := mustNew(t, Config{})
	if l.cfg.Floor != 0.1 || l.cfg.Window != time.Minute || l.cfg.MinimumSamples != 10 || l.cfg.MinimumAllowance != 0.05 {
		t.Fatalf("defaults = %+v", l.cfg)
	}
}

// TestExactSequence walks the rule period by period. Decisions happen when
// a period closes, so the allowance read in period p reflects periods < p.
func TestExactSequence(t *testing.T) {
	l := mustNew(t, Config{})
	steps := []struct {
		started, won int
		want         float64 // allowance read at the start of the next period
	}{
		{60, 0, 0.5},     // none of 60 won: at 10% that happens 0.2% of the time: halve
		{60, 6, 0.75},    // exactly 10% clears the floor: +0.25
		{60, 0, 0.375},   // halve
		{9, 0, 0.375},    // 9 < MinimumSamples: no opinion, counts kept
		{42, 0, 0.1875},  // 9+42 = 51 over two periods, 0 won (0.46% at 10%): halve
		{30, 10, 0.4375}, // +0.25
		{10, 10, 0.6875},
		{10, 5, 0.9375},
		{10, 5, 1}, // capped at 1
		{60, 0, 0.5},
		{60, 0, 0.25},
		{60, 0, 0.125},
		{60, 0, 0.0625},
		{60, 0, 0.05}, // floored at MinimumAllowance
		{60, 0, 0.05},
		{100, 2, 0.05}, // 2 of 100: short of 10% by more than chance (0.19%): halve (floored)
		{20, 0, 0.05},  // none of 20: at 10% that happens 12% of the time: no opinion, counts kept
		{20, 4, 0.3},   // 4 of 40 over both: 10%: +0.25
	}
	for p, s := range steps {
		feed(l, p, s.started, s.won)
		if got := l.Allowance(at(time.Duration(p+1) * period)); got != s.want {
			t.Fatalf("after period %d (%d started, %d won): allowance %v, want %v", p, s.started, s.won, got, s.want)
		}
		// Reading again within the period changes nothing.
		if got := l.Allowance(at(time.Duration(p+1)*period + period - 1)); got != s.want {
			t.Fatalf("period %d: allowance moved within a period to %v", p+1, got)
		}
	}
}

func TestFewSamplesFallOutOfWindow(t *testing.T) {
	l := mustNew(t, Config{})
	// Nine hedges, none winning, then three quiet periods: still no
	// opinion. A fifth period pushes the nine out of the Window, so 42
	// further hedges that do not win are judged on their own: none of 42
	// happens 1.2% of the time at 10%, too often to halve on.
	feed(l, 0, 9, 0)
	for p := 1; p <= 4; p++ {
		if got := l.Allowance(at(time.Duration(p) * period)); got != 1 {
			t.Fatalf("period %d: allowance %v, want 1", p, got)
		}
	}
	feed(l, 4, 42, 0)
	if got := l.Allowance(at(5 * period)); got != 1 {
		t.Fatalf("old samples still counted: allowance %v", got)
	}
	// Whereas within the Window they add up: none of 51 (0.46%) halves.
	l = mustNew(t, Config{})
	feed(l, 0, 9, 0)
	feed(l, 3, 42, 0)
	if got := l.Allowance(at(4 * period)); got != 0.5 {
		t.Fatalf("samples within the Window not added up: allowance %v, want 0.5", got)
	}
}

func TestIdlePeriodsRollForward(t *testing.T) {
	l := mustNew(t, Config{})
	feed(l, 0, 60, 0)
	if got := l.Allowance(at(period)); got != 0.5 {
		t.Fatalf("allowance %v, want 0.5", got)
	}
	// An hour of silence: one jump, no decisions made on empty periods.
	l.Started(at(time.Hour))
	if got := l.Allowance(at(time.Hour)); got != 0.5 {
		t.Fatalf("allowance after idle hour %v, want 0.5", got)
	}
	// Counts restart in the hour's period and are judged when it ends.
	for i := range 9 {
		l.Started(at(time.Hour + time.Duration(i)))
		l.Won(at(time.Hour + time.Duration(i)))
	}
	if got := l.Allowance(at(time.Hour + period)); got != 0.75 {
		t.Fatalf("allowance %v, want 0.75", got)
	}
	// A time behind the current period counts in the current period.
	l.Started(at(0))
	if got := l.Allowance(at(time.Hour + period)); got != 0.75 {
		t.Fatalf("allowance %v, want 0.75", got)
	}
}

func TestZeroTimeBase(t *testing.T) {
	l := mustNew(t, Config{})
	var z time.Time
	for i := range 60 {
		l.Started(z.Add(time.Duration(i)))
	}
	if got := l.Allowance(z.Add(period)); got != 0.5 {
		t.Fatalf("allowance %v, want 0.5", got)
	}
}

func TestAdmitFraction(t *testing.T) {
	for _, c := range []struct {
		allowance float64
		every     int // admits every n-th would-be hedge
	}{{1, 1}, {0.5, 2}, {0.25, 4}, {0.125, 8}, {0.05, 20}} {
		l := mustNew(t, Config{})
		l.allowance = c.allowance
		var got []int
		for i := 1; i <= 100; i++ {
			if l.Admit(t0) {
				got = append(got, i)
			}
		}
		if len(got) != 100/c.every {
			t.Fatalf("allowance %v admitted %d of 100, want %d", c.allowance, len(got), 100/c.every)
		}
		for k, i := range got {
			if i != (k+1)*c.every {
				t.Fatalf("allowance %v admitted %v, want every %d-th", c.allowance, got, c.every)
			}
		}
	}
	// 0.375 = 3/8: three of every eight, evenly.
	l := mustNew(t, Config{})
	l.allowance = 0.375
	var pattern []bool
	for range 8 {
		pattern = append(pattern, l.Admit(t0))
	}
	want := []bool{false, false, true, false, false, true, false, true}
	for i := range want {
		if pattern[i] != want[i] {
			t.Fatalf("allowance 0.375 pattern %v, want %v", pattern, want)
		}
	}
}

// simulate drives a loop as the core does: each period has 100 would-be
// hedges, admitted ones start, and a share of the started ones win.
func simulate(l *Loop, from, to int, winShare float64) []float64 {
	var allowances []float64
	for p := from; p < to; p++ {
		base := time.Duration(p) * period
		started, won := 0, 0
		for i := range 100 {
			now := at(base + time.Duration(i)*100*time.Millisecond)
			if !l.Admit(now) {
				continue
			}
			l.Started(now)
			started++
			if float64(won) < winShare*float64(started) {
				l.Won(now.Add(time.Millisecond))
				won++
			}
		}
		allowances = append(allowances, l.Allowance(at(base+period)))
	}
	return allowances
}

func TestNeverWinningThenRecovering(t *testing.T) {
	l := mustNew(t, Config{})
	// Hedges never win: the allowance halves whenever 51 or more hedges
	// have started without a win (fewer is not sure enough at 10%): 100
	// started halve it, then two periods of 50, then three of 25.
	got := simulate(l, 0, 8, 0)
	want := []float64{0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("never winning: allowances %v, want %v", got, want)
		}
	}
	// They win again: a quarter back per decision until 1. The first
	// decision also counts the 37 losing hedges kept from the three periods
	// before it, and half of the 12 new ones winning clears 10% of all 49.
	got = simulate(l, 8, 16, 0.5)
	want = []float64{0.375, 0.625, 0.875, 1, 1, 1, 1, 1}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("winning again: allowances %v, want %v", got, want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	l := mustNew(t, Config{Window: time.Second})
	// Eight goroutines share one clock (a counter stepping 125µs per call) and one count of
	// started hedges, of which exactly every 20th wins: 5 % whatever the interleaving, under
	// the 10 % floor, so the allowance must end at its minimum.
	var tick, started atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5000 {
				now := at(time.Duration(tick.Add(1)) * 125 * time.Microsecond)
				if l.Admit(now) {
					l.Started(now)
					if started.Add(1)%20 == 0 {
						l.Won(now)
					}
				}
				if a := l.Allowance(now); a < 0.05 || a > 1 {
					t.Errorf("allowance %v", a)
				}
			}
		})
	}
	wg.Wait()
	if a := l.Allowance(at(10 * time.Second)); a != 0.05 {
		t.Fatalf("allowance %v after %d hedges winning 5%%, want 0.05", a, started.Load())
	}
}

func FuzzLoop(f *testing.F) {
	f.Add(0.0, int64(0), 0, 0.0, []byte{0, 1, 2, 3})
	f.Add(1.0, int64(4), 1, 1.0, []byte{3, 3, 3, 0, 0, 255})
	f.Add(0.3, int64(time.Second), 3, 0.2, []byte{1, 0, 1, 0, 2, 200, 2})
	f.Fuzz(func(t *testing.T, floor float64, window int64, minSamples int, minAllowance float64, ops []byte) {
		cfg := Config{Floor: floor, Window: time.Duration(window), MinimumSamples: minSamples, MinimumAllowance: minAllowance}
		l, err := New(cfg)
		if err != nil {
			if cfg.Validate() == nil {
				t.Fatalf("New failed, Validate passed: %v", err)
			}
			return
		}
		lo := l.cfg.MinimumAllowance
		now := time.Time{}
		for _, op := range ops {
			now = now.Add(time.Duration(op) * l.cfg.Window / 64)
			switch op % 4 {
			case 0:
				l.Admit(now)
			case 1:
				l.Started(now)
			case 2:
				l.Won(now)
			}
			if a := l.Allowance(now); !(a >= lo && a <= 1) {
				t.Fatalf("allowance %v outside [%v, 1]", a, lo)
			}
		}
	})
}

// TestWinning: a loop has found hedges winning only once a decision said so, and only while
// that decision is within the Window: no opinion (too few hedges) is not a finding, a
// decision that halves the allowance undoes it, and one a Window old has expired.
func TestWinning(t *testing.T) {
	l := mustNew(t, Config{})
	if l.Winning(at(0)) {
		t.Fatal("a new loop has found hedges winning")
	}
	feed(l, 0, 5, 5) // too few for a decision
	if l.Winning(at(period + time.Second)) {
		t.Fatal("winning on 5 hedges, fewer than MinimumSamples")
	}
	feed(l, 1, 10, 5) // half won: the allowance stays at 1, and they win
	if !l.Winning(at(2*period + time.Second)) {
		t.Fatal("not winning after a decision that found half the hedges winning")
	}
	if !l.Winning(at(5*period + time.Second)) {
		t.Fatal("not winning within the Window of that decision")
	}
	if l.Winning(at(7*period + time.Second)) {
		t.Fatal("still winning more than a Window after the decision")
	}
	l = mustNew(t, Config{})
	feed(l, 0, 10, 5)
	feed(l, 1, 60, 0) // none won: the allowance halves
	if got := l.Allowance(at(2*period + time.Second)); got != 0.5 {
		t.Fatalf("allowance %v, want 0.5", got)
	}
	if l.Winning(at(2*period + time.Second)) {
		t.Fatal("winning after a decision that found none winning")
	}
}

// TestThinClientNotStarved: a client that sees ten hedges a decision period, winning 37% of
// the time against a Floor of 30%, is not halved by bad luck. Halving whenever none of ten
// won (1% of periods) cut its hedges, and its tail, for a minute at a time, over and over.
func TestThinClientNotStarved(t *testing.T) {
	l := mustNew(t, Config{Floor: 0.3})
	rng := rand.New(rand.NewPCG(1, 2))
	halvings, last := 0, 1.0
	for p := range 2000 {
		base := time.Duration(p) * period
		for i := range 10 {
			now := at(base + time.Duration(i)*time.Second)
			l.Started(now)
			if rng.Float64() < 0.37 {
				l.Won(now.Add(time.Millisecond))
			}
		}
		a := l.Allowance(at(base + period))
		if a < last {
			halvings++
		}
		last = a
	}
	if halvings > 2 {
		t.Fatalf("a loop whose hedges win 37%% against a floor of 30%% halved %d times in 2000 periods", halvings)
	}
	// Whereas a client whose hedges win 15% is found out within a few periods.
	l = mustNew(t, Config{Floor: 0.3})
	for p := range 6 {
		base := time.Duration(p) * period
		for i := range 10 {
			now := at(base + time.Duration(i)*time.Second)
			l.Started(now)
			if i == 0 && p%2 == 0 {
				l.Won(now.Add(time.Millisecond))
			}
		}
	}
	if got := l.Allowance(at(6 * period)); got >= 1 {
		t.Fatalf("a loop whose hedges win 5 of 60 against a floor of 30%% kept allowance %v", got)
	}
}

// TestBinomialTail checks the lower tail against a direct sum of the binomial's terms.
func TestBinomialTail(t *testing.T) {
	direct := func(k, n int64, p float64) float64 {
		sum := 0.0
		for i := int64(0); i <= k; i++ {
			lg, _ := math.Lgamma(float64(n) + 1)
			li, _ := math.Lgamma(float64(i) + 1)
			lni, _ := math.Lgamma(float64(n-i) + 1)
			sum += math.Exp(lg - li - lni + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
		}
		return sum
	}
	checked := 0
	for _, p := range []float64{0.05, 0.1, 0.3, 0.5, 0.9} {
		for n := int64(1); n <= 200; n++ {
			for k := int64(0); float64(k) < p*float64(n); k++ {
				for _, alpha := range []float64{0.005, 0.05} {
					want := direct(k, n, p)
					if math.Abs(want-alpha) < 1e-9*alpha {
						continue
					}
					if got := binomialTailBelow(k, n, p, alpha); got != (want < alpha) {
						t.Fatalf("P(X <= %d | n=%d, p=%v) = %v: below %v = %v, want %v", k, n, p, want, alpha, got, want < alpha)
					}
					checked++
				}
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("checked only %d cases", checked)
	}
	// A large count: 29% of ten million is far below 30% (about 69 standard deviations);
	// 29.99% is within one.
	if !binomialTailBelow(2_900_000, 10_000_000, 0.3, falseAlarm) {
		t.Fatal("29% of 10,000,000 not below a floor of 30%")
	}
	if binomialTailBelow(2_999_000, 10_000_000, 0.3, falseAlarm) {
		t.Fatal("29.99% of 10,000,000 judged below a floor of 30%")
	}
}
