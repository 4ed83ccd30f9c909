package sim_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// TestEmptyDistributionPanicsClearly: a service time drawn from an empty distribution (no
// samples, no components, none at all) panicked with "invalid argument to IntN" or "index out
// of range [-1]". It panics with a sim: message naming the rule, the error a run returns for
// the same distribution.
func TestEmptyDistributionPanicsClearly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		draw func()
		want string
	}{
		{"ServiceTime(Empirical{})", func() { sim.ServiceTime(sim.Empirical{}, 1, 0, 0) }, "sim: Empirical.Samples must not be empty"},
		{"ServiceTime(Mixture{})", func() { sim.ServiceTime(sim.Mixture{}, 1, 0, 0) }, "sim: Mixture.Components must not be empty"},
		{"ServiceTime(nil)", func() { sim.ServiceTime(nil, 1, 0, 0) }, "sim: service distribution is nil"},
		{"ServiceTime of an empty component", func() {
			sim.ServiceTime(sim.Mixture{Components: []sim.Component{{Weight: 1, Dist: sim.Empirical{}}}}, 1, 0, 0)
		}, "sim: Empirical.Samples must not be empty"},
		{"Empirical.Sample", func() { sim.Empirical{Samples: []time.Duration{}}.Sample(r) }, "sim: Empirical.Samples must not be empty"},
		{"Mixture.Sample", func() { sim.Mixture{}.Sample(r) }, "sim: Mixture.Components must not be empty"},
		{"Series.Sample", func() { sim.Series{}.Sample(r) }, "sim: Series.Samples must not be empty"},
		{"Series.SampleAt", func() { sim.Series{Arrivals: []time.Duration{0}}.SampleAt(r, 0, 0) }, "sim: Series.Samples must not be empty"},
	} {
		func() {
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("%s: panic %v, want %q", tc.name, got, tc.want)
				}
			}()
			tc.draw()
		}()
	}

	// A run refuses the same distributions with the same words, as an error.
	for _, d := range []sim.Distribution{sim.Empirical{}, sim.Mixture{}} {
		_, err := sim.Run(sim.Params{Service: d, Calls: 100}, sim.Setups(0)[0], 50, sim.Ignored, 1)
		if err == nil || !strings.HasPrefix(err.Error(), "sim: ") || !strings.Contains(err.Error(), "must not be empty") {
			t.Errorf("Run with %v: %v, want a sim: error saying it must not be empty", d, err)
		}
	}
	// One sample is enough.
	if got := sim.ServiceTime(sim.Empirical{Samples: []time.Duration{7 * time.Millisecond}}, 1, 0, 0); got != 7*time.Millisecond {
		t.Errorf("ServiceTime of one sample = %v, want 7ms", got)
	}
}
