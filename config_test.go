package hedge_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

func TestConfigErrorsNameTheFieldAndTheRule(t *testing.T) {
	cases := []struct {
		cfg  hedge.Config
		want string
	}{
		{hedge.Config{Attempts: -1}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: hedge.MaxAttempts + 1}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: 1 << 40}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: math.MaxInt}, "Attempts must be in [0, 10]"},
		{hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 1}, "Attempts must be >= 2 to hedge"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.3)}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.AtQuantile(1)}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.AtQuantile(math.NaN())}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.After(-time.Second)}, "After(d) needs d >= 0"},
		{hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 2, MaximumConcurrent: 3}, "MaximumConcurrent (3) must not exceed Attempts (2)"},
		{hedge.Config{MaximumConcurrent: -1}, "MaximumConcurrent must be >= 0"},
		{hedge.Config{MinimumDelay: -1}, "MinimumDelay must be >= 0"},
		{hedge.Config{MaximumDelay: -1}, "MaximumDelay must be >= 0"},
		{hedge.Config{MinimumDelay: time.Second, MaximumDelay: time.Millisecond}, "MaximumDelay (1ms) must be >= MinimumDelay (1s)"},
		{hedge.Config{Window: -time.Second}, "Window must be >= 0"},
		{hedge.Config{MinimumSamples: -5}, "MinimumSamples must be >= 0"},
		{hedge.Config{SuppressAt: 1.5}, "SuppressAt must be in [0, 1]"},
		{hedge.Config{Backoff: hedge.Backoff{Multiplier: 0.5}}, "Backoff.Multiplier must be >= 1"},
		{hedge.Config{Backoff: hedge.Backoff{Jitter: 2}}, "Backoff.Jitter must be <= 1"},
		{hedge.Config{OverloadCooldown: -1}, "OverloadCooldown must be >= 0"},
		{hedge.Config{Budget: budget.Config{Ratio: -1}}, "Budget"},
		{hedge.Config{Trigger: hedge.StartAware(0.2)}, "StartAware(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95), BacklogRatio: 0.9}, "BacklogRatio must be > 1"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95), BacklogRatio: math.NaN()}, "BacklogRatio must be > 1"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95), MinimumWinRate: 1.5}, "MinimumWinRate must be <= 1"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.95), MinimumWinRate: math.NaN()}, "MinimumWinRate must be <= 1"},
	}
	for _, c := range cases {
		_, err := hedge.New(c.cfg)
		if err == nil {
			t.Errorf("New(%+v) = nil error, want %q", c.cfg, c.want)
			continue
		}
		if !errors.Is(err, hedge.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want ErrInvalidConfig mentioning %q", c.cfg, err, c.want)
		}
	}
}

func TestZeroConfigIsValidAndDocumentedDefaultsApply(t *testing.T) {
	p, err := hedge.New(hedge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The default budget with no calls yet holds its reserve: 1 per second over 10s.
	if m := p.Measured(); m.Warm || m.Budget != 10 || m.Calls != 0 {
		t.Errorf("zero config: %+v; want cold, budget 10, no calls", m)
	}
	if _, err := hedge.New(hedge.Config{Trigger: hedge.AtQuantile(0.95)}); err != nil {
		t.Errorf("the recommended config is invalid: %v", err)
	}
	if got := hedge.StartAware(0.9).String(); got != "StartAware(0.9)" {
		t.Errorf("StartAware(0.9).String() = %q", got)
	}
}

func TestMustNewPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("MustNew did not panic")
		}
	}()
	hedge.MustNew(hedge.Config{Attempts: -1})
}

// FuzzConfig: New never panics, and it accepts exactly the configurations whose
// resolved values respect the documented rules.
func FuzzConfig(f *testing.F) {
	f.Add(uint8(1), 0.95, int64(0), 2, 2, int64(0), int64(0), 0.5)
	f.Add(uint8(2), 0.0, int64(20e6), 3, 3, int64(10e6), int64(1e9), 0.0)
	f.Add(uint8(0), 0.0, int64(-1), -1, 5, int64(-1), int64(-1), 2.0)
	f.Fuzz(func(t *testing.T, kind uint8, q float64, d int64, attempts, maxConc int, minD, maxD int64, suppress float64) {
		var trig hedge.Trigger
		switch kind % 4 {
		case 1:
			trig = hedge.AtQuantile(q)
		case 2:
			trig = hedge.After(time.Duration(d))
		case 3:
			trig = hedge.Tied()
		}
		cfg := hedge.Config{Trigger: trig, Attempts: attempts, MaximumConcurrent: maxConc,
			MinimumDelay: time.Duration(minD), MaximumDelay: time.Duration(maxD), SuppressAt: suppress}
		p, err := hedge.New(cfg)
		if err != nil {
			if !errors.Is(err, hedge.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		if attempts < 0 || attempts > hedge.MaxAttempts || maxConc < 0 || minD < 0 || maxD < 0 || suppress < 0 || suppress > 1 {
			t.Fatalf("accepted an invalid config %+v", cfg)
		}
		if kind%4 == 1 && !(q >= 0.5 && q < 1) {
			t.Fatalf("accepted AtQuantile(%v)", q)
		}
		if kind%4 != 0 && attempts == 1 {
			t.Fatalf("accepted hedging with 1 attempt")
		}
		c := p.NewCall(hedge.CallOptions{})
		if acts := c.Start(t0); len(acts) == 0 {
			t.Fatal("Start returned no action")
		}
	})
}
