package hedge_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/winrate"
)

func TestConfigErrorsNameTheFieldAndTheRule(t *testing.T) {
	cases := []struct {
		cfg  hedge.Config
		want string
	}{
		{hedge.Config{Attempts: -1}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: hedge.MaxAttempts + 1}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: math.MaxInt32}, "Attempts must be in [0, 10]"},
		{hedge.Config{Attempts: math.MaxInt}, "Attempts must be in [0, 10]"},
		{hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 1}, "Attempts must be >= 2 to hedge"},
		{hedge.Config{Trigger: hedge.AtQuantile(0.3)}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.AtQuantile(1)}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.AtQuantile(math.NaN())}, "AtQuantile(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: hedge.After(-time.Second)}, "After(d) needs d >= 0"},
		{hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 2, MaximumConcurrent: 3}, "MaximumConcurrent (3) must not exceed Attempts (2)"},
		{hedge.Config{MaximumConcurrent: -1}, "MaximumConcurrent must be >= 0"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{MinimumDelay: -1})}, "Trigger: Adaptive.MinimumDelay must be >= 0"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{MaximumDelay: -1})}, "Trigger: Adaptive.MaximumDelay must be >= 0"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{MinimumDelay: time.Second, MaximumDelay: time.Millisecond})}, "Adaptive.MaximumDelay (1ms) must be >= MinimumDelay (1s)"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{Window: -time.Second})}, "Trigger: Adaptive.Window must be 0 (30s) or at least 1ms"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{MinimumSamples: -5})}, "Trigger: Adaptive.MinimumSamples must be >= 0"},
		{hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{MinimumDelay: -1})}, "Trigger: Adaptive.MinimumDelay must be >= 0"},
		{hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: -2})}, "Trigger: Adaptive.TieDelay must be >= 0"},
		{hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{BacklogRatio: 2})}, "read by AtQuantile and StartAware, not by Tied"},
		{hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{WinRate: winrate.Config{Floor: 0.5}})}, "read by AtQuantile and StartAware, not by Tied"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{TieDelay: time.Millisecond})}, "Adaptive.TieDelay is read only by Tied, not by AtQuantile"},
		{hedge.Config{Breaker: &breaker.Config{DegradedAt: 1.5}}, "Breaker: breaker: Config.DegradedAt must be in [0, 1]"},
		{hedge.Config{Backoff: hedge.Backoff{Multiplier: 0.5}}, "Backoff.Multiplier must be >= 1"},
		{hedge.Config{Backoff: hedge.Backoff{Jitter: 2}}, "Backoff.Jitter must be in [0, 1]"},
		{hedge.Config{Backoff: hedge.Backoff{Jitter: -0.5}}, "Backoff.Jitter must be in [0, 1]"},
		{hedge.Config{OverloadCooldown: -1}, "OverloadCooldown must be >= 0"},
		{hedge.Config{Budget: budget.Config{Ratio: -1}}, "Budget"},
		{hedge.Config{Trigger: hedge.StartAware(0.2)}, "StartAware(q) needs q in [0.5, 1)"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{BacklogRatio: 0.9})}, "Trigger: Adaptive.BacklogRatio must be a finite number > 1"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{BacklogRatio: -2})}, "Trigger: Adaptive.BacklogRatio must be a finite number > 1"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{BacklogRatio: math.NaN()})}, "Trigger: Adaptive.BacklogRatio must be a finite number > 1"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{BacklogRatio: math.Inf(1)})}, "Trigger: Adaptive.BacklogRatio must be a finite number > 1"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{BacklogRatio: math.Inf(-1)})}, "Trigger: Adaptive.BacklogRatio must be a finite number > 1"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{MinimumInService: -time.Millisecond})}, "Trigger: Adaptive.MinimumInService must be >= 0"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{WinRate: winrate.Config{Floor: 1.5}})}, "Trigger: Adaptive.WinRate: winrate"},
		{hedge.Config{Trigger: q95(hedge.Adaptive{WinRate: winrate.Config{Floor: math.NaN()}})}, "Trigger: Adaptive.WinRate: winrate"},
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
		if verr := c.cfg.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("Validate(%+v) = %v; want New's error %v", c.cfg, verr, err)
		}
	}
}

func q95(a hedge.Adaptive) hedge.Trigger { return hedge.AtQuantile(0.95, a) }

// Off is the one spelling of off: each setting that is on by default accepts it, and a
// policy built with it is valid.
func TestOffIsAcceptedWhereverSomethingIsOnByDefault(t *testing.T) {
	for _, cfg := range []hedge.Config{
		{Trigger: q95(hedge.Adaptive{MinimumInService: hedge.Off, BacklogRatio: hedge.Off, WinRate: winrate.Config{Floor: hedge.Off}})},
		{Trigger: hedge.StartAware(0.9, hedge.Adaptive{BacklogRatio: hedge.Off})},
		{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off})},
		{Attempts: 3, Backoff: hedge.Backoff{Jitter: hedge.Off}, Budget: budget.Config{Off: true}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%v) = %v, want nil", cfg.Trigger, err)
		}
	}
}

func TestTriggerTakesAtMostOneSettingsStruct(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "hedge: AtQuantile") {
			t.Fatalf("recovered %v, want a hedge: panic naming AtQuantile", r)
		}
	}()
	hedge.AtQuantile(0.95, hedge.Adaptive{}, hedge.Adaptive{})
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
	if got := hedge.StartAware(0.9).String(); got != "start-aware 0.9" {
		t.Errorf("StartAware(0.9).String() = %q, want its text form", got)
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
			trig = hedge.AtQuantile(q, hedge.Adaptive{MinimumDelay: time.Duration(minD), MaximumDelay: time.Duration(maxD)})
		case 2:
			trig = hedge.After(time.Duration(d))
		case 3:
			trig = hedge.Tied(hedge.Adaptive{MinimumDelay: time.Duration(minD), MaximumDelay: time.Duration(maxD)})
		}
		cfg := hedge.Config{Trigger: trig, Attempts: attempts, MaximumConcurrent: maxConc,
			Breaker: &breaker.Config{DegradedAt: suppress}}
		p, err := hedge.New(cfg)
		if err != nil {
			if !errors.Is(err, hedge.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		if attempts < 0 || attempts > hedge.MaxAttempts || maxConc < 0 || suppress < 0 || suppress > 1 {
			t.Fatalf("accepted an invalid config %+v", cfg)
		}
		if kind%4 != 0 && kind%4 != 2 && (minD < 0 || maxD < 0) {
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
