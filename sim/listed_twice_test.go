package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestSweepScorecardRefuseListedTwice: a seed, load or family listed twice ran its points
// twice, and a report's or scorecard's totals counted them twice ("holds on N of M points"),
// where cmd/hedgesim refuses such lists in its flags. Sweep and Scorecard refuse them too,
// before running anything; lists without a repeat still run (here: as far as a cancelled
// context lets them).
func TestSweepScorecardRefuseListedTwice(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing should run either way: a refused list fails first, an accepted one stops
	fam := sim.Families()[0].Name
	progress := func(done, total int) { t.Errorf("progress(%d, %d): a point ran", done, total) }
	sweep := func(c sim.SweepConfig) error {
		c.Setups, c.Modes, c.Calls = []string{sim.SetupNoHedge}, []string{sim.Ignored}, 1000
		_, err := sim.Sweep(ctx, c, progress)
		return err
	}
	scorecard := func(c sim.ScorecardConfig) error {
		c.Modes, c.Calls = []string{sim.Ignored}, 1000
		_, err := sim.Scorecard(ctx, c, progress)
		return err
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string // "" = accepted
	}{
		{"sweep seeds", func() error { return sweep(sim.SweepConfig{Seeds: []uint64{1, 2, 1}}) }, "sim: seed 1 is listed twice"},
		{"sweep loads", func() error { return sweep(sim.SweepConfig{Loads: []float64{50, 70, 50}}) }, "sim: load 50 is listed twice"},
		{"sweep once each", func() error { return sweep(sim.SweepConfig{Seeds: []uint64{1, 2}, Loads: []float64{50, 70}}) }, ""},
		{"scorecard seeds", func() error { return scorecard(sim.ScorecardConfig{Families: []string{fam}, Seeds: []uint64{3, 3}}) }, "sim: seed 3 is listed twice"},
		{"scorecard loads", func() error { return scorecard(sim.ScorecardConfig{Families: []string{fam}, Loads: []float64{30, 30}}) }, "sim: load 30 is listed twice"},
		{"scorecard families", func() error { return scorecard(sim.ScorecardConfig{Families: []string{fam, fam}}) }, `sim: family "` + fam + `" is listed twice`},
		{"scorecard once each", func() error {
			return scorecard(sim.ScorecardConfig{Families: []string{fam}, Seeds: []uint64{1, 2}, Loads: []float64{30, 50}})
		}, ""},
	} {
		err := tc.run()
		switch {
		case tc.want == "" && !errors.Is(err, context.Canceled):
			t.Errorf("%s: %v, want the cancelled context's error (the lists are valid)", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
