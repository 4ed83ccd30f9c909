package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/hedgekit/hedge"
)

// Every configuration the simulator refuses is told apart from a stopped run with errors.Is,
// as the library's own (hedge.ErrInvalidConfig, budget.ErrInvalidConfig, ...) are.
func TestInvalidConfigErrorsAreSentinels(t *testing.T) {
	ctx := context.Background()
	bad := Setup{Name: "bad", Config: hedge.Config{Attempts: -1}}
	cases := []struct {
		name string
		err  func() error
	}{
		{"Run: Workers out of range", func() error { _, err := Run(Params{Workers: -1}, bad, 50, Ignored, 1); return err }},
		{"Run: unknown cancellation mode", func() error { _, err := Run(Params{Calls: 100}, Setups(0)[0], 50, "sometimes", 1); return err }},
		{"Run: invalid hedge.Config", func() error { _, err := Run(Params{Calls: 100}, bad, 50, Ignored, 1); return err }},
		{"Sweep: unknown setup", func() error {
			_, err := Sweep(ctx, SweepConfig{Setups: []string{"no such setup"}, Loads: []float64{50}, Seeds: []uint64{1}}, nil)
			return err
		}},
		{"Sweep: seed listed twice", func() error {
			_, err := Sweep(ctx, SweepConfig{Loads: []float64{50}, Seeds: []uint64{1, 1}}, nil)
			return err
		}},
		{"Scorecard: unknown family", func() error {
			_, err := Scorecard(ctx, ScorecardConfig{Families: []string{"no such family"}}, nil)
			return err
		}},
		{"Scorecard: unknown setup", func() error {
			_, err := Scorecard(ctx, ScorecardConfig{Setup: "no such setup"}, nil)
			return err
		}},
		{"Timelines: two loads", func() error {
			_, err := Timelines(ctx, SweepConfig{Loads: []float64{30, 50}, Seeds: []uint64{1}, Modes: []string{Ignored}}, 0)
			return err
		}},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v does not match sim.ErrInvalidConfig", c.name, err)
		}
	}
	// The wrapped errors still match what they matched before.
	if _, err := Run(Params{Calls: 100}, bad, 50, Ignored, 1); !errors.Is(err, hedge.ErrInvalidConfig) {
		t.Errorf("Run with an invalid hedge.Config: %v does not match hedge.ErrInvalidConfig", err)
	}
	if _, err := Timelines(ctx, SweepConfig{Loads: []float64{30, 50}, Seeds: []uint64{1}, Modes: []string{Ignored}}, 0); !errors.Is(err, ErrTimelinePoint) {
		t.Errorf("Timelines with two loads: %v does not match ErrTimelinePoint", err)
	}
	// A run stopped by its context is not a configuration error.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Sweep(stopped, SweepConfig{Setups: []string{SetupNoHedge}, Loads: []float64{50}, Seeds: []uint64{1}, Calls: 1000}, nil); err == nil || errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Sweep with a cancelled context: %v; want an error that is not sim.ErrInvalidConfig", err)
	}
}
