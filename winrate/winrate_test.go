package winrate

import (
	"math"
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
		{20, 0, 0.5},     // none won: halve
		{20, 2, 0.75},    // exactly 10% clears the floor: +0.25
		{20, 0, 0.375},   // halve
		{9, 0, 0.375},    // 9 < MinimumSamples: no opinion, counts kept
		{1, 0, 0.1875},   // 9+1 = 10 over two periods, 0 won: halve
		{30, 10, 0.4375}, // +0.25
		{10, 10, 0.6875},
		{10, 5, 0.9375},
		{10, 5, 1}, // capped at 1
		{10, 0, 0.5},
		{10, 0, 0.25},
		{10, 0, 0.125},
		{10, 0, 0.0625},
		{10, 0, 0.05}, // floored at MinimumAllowance
		{10, 0, 0.05},
		{60, 1, 0.05}, // 1 of 60: short of 10% by more than chance: halve (floored)
		{20, 1, 0.05}, // 1 of 20: short of 10%, by no more than chance: no opinion, counts kept
		{20, 3, 0.3},  // 4 of 40 over both: 10%: +0.25
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
	// opinion. A fifth period pushes the nine out of the Window, so a
	// single further hedge is judged on its own (and is too few).
	feed(l, 0, 9, 0)
	for p := 1; p <= 4; p++ {
		if got := l.Allowance(at(time.Duration(p) * period)); got != 1 {
			t.Fatalf("period %d: allowance %v, want 1", p, got)
		}
	}
	feed(l, 4, 1, 0)
	if got := l.Allowance(at(5 * period)); got != 1 {
		t.Fatalf("old samples still counted: allowance %v", got)
	}
	// Whereas within the Window they add up.
	l = mustNew(t, Config{})
	feed(l, 0, 9, 0)
	feed(l, 3, 1, 0)
	if got := l.Allowance(at(4 * period)); got != 0.5 {
		t.Fatalf("samples within the Window not added up: allowance %v, want 0.5", got)
	}
}

func TestIdlePeriodsRollForward(t *testing.T) {
	l := mustNew(t, Config{})
	feed(l, 0, 20, 0)
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
	for i := range 10 {
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
	// Hedges never win: the allowance halves each period (100, 50, 25, 12
	// hedges started) until 0.0625 leaves only 6 per period, too few; two
	// periods together are judged and it reaches 0.05, where 5 per period
	// still start and are judged every second period.
	got := simulate(l, 0, 8, 0)
	want := []float64{0.5, 0.25, 0.125, 0.0625, 0.0625, 0.05, 0.05, 0.05}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("never winning: allowances %v, want %v", got, want)
		}
	}
	// They win again: a quarter back per decision until 1. At 0.05 the
	// first decision needs two periods of samples.
	got = simulate(l, 8, 16, 0.5)
	want = []float64{0.05, 0.3, 0.55, 0.8, 1, 1, 1, 1}
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
	feed(l, 1, 20, 0) // none won: the allowance halves
	if got := l.Allowance(at(2*period + time.Second)); got != 0.5 {
		t.Fatalf("allowance %v, want 0.5", got)
	}
	if l.Winning(at(2*period + time.Second)) {
		t.Fatal("winning after a decision that found none winning")
	}
}
