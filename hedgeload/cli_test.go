package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fell-behind hint names how many points ran at once, which is not -parallel when the run
// has fewer points, or is a closed loop (one at a time): it told a one-point run that "it was
// 4" and to lower -parallel.
func TestBehindHintPointsAtOnce(t *testing.T) {
	behind := &BehindError{Call: 7, Lag: time.Second, MaxLag: 100 * time.Millisecond}
	one := runConfig{parallel: 4, setups: []string{"no hedge"}, loads: []float64{50}, modes: []string{"ignored"},
		protocols: []string{HTTP2}, seeds: []uint64{1}}
	closed := one
	closed.loads, closed.setups, closed.callers = []float64{0}, []string{"no hedge", "recommended"}, 64
	many := one
	many.setups, many.loads, many.modes = []string{"no hedge", "recommended"}, []float64{30, 50, 70}, []string{"ignored", "reaches"}
	three := one
	three.loads = []float64{30, 50, 70}
	for _, c := range []struct {
		name   string
		cfg    runConfig
		atOnce int
		want   string
	}{
		{"one point at -parallel 4", one, 1, "fell behind with one point at a time"},
		{"closed loop at -parallel 4", closed, 1, "fell behind with one point at a time"},
		{"three points at -parallel 4", three, 3, "run one point at a time (-parallel 1; 3 ran at once)"},
		{"twelve points at -parallel 4", many, 4, "(-parallel 2, or 1; 4 ran at once)"},
	} {
		n := pointsAtOnce(c.cfg)
		h := behindHint(behind, n)
		if n != c.atOnce || !strings.Contains(h, c.want) {
			t.Errorf("%s: %d at once, hint %q; want %d and %q", c.name, n, h, c.atOnce, c.want)
		}
		if n == 1 && strings.Contains(h, "-parallel") {
			t.Errorf("%s: hint %q suggests -parallel, though one point ran at a time", c.name, h)
		}
	}
}

// Limits and names the command checked too late, or not at all.
func TestParseArgsChecks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the usage error
	}{
		{[]string{"-calls", "1000001"}, "-calls must be in [100, 1000000], got 1000001"},
		{[]string{"-balancer", "bogus"}, `-balancer must be one of`},
		{[]string{"-balancer", "random"}, "-balancer needs -replicas > 1"},
		{[]string{"-balancer", "p2c", "-replicas", "1"}, "-balancer needs -replicas > 1"},
		{[]string{"-balancer", "random", "-protocol", "grpc"}, "-balancer needs -replicas > 1"},
		{[]string{"-service", "gamma"}, "-service must be mixture, exponential:MEAN, empirical:FILE or stragglers, got \"gamma\""},
		{[]string{"-service", "stragglers:2"}, "-service stragglers takes no argument"},
		{[]string{"-hedge-delay", "5ns", "-time-scale", "0.1"}, "-hedge-delay × -time-scale must be at least 1µs, got 5ns × 0.1 = 0s"},
		{[]string{"-hedge-delay", "1µs", "-time-scale", "0.5"}, "-hedge-delay × -time-scale must be at least 1µs"},
		// A tiny load would send its calls for days (or overflow the point's deadline): refused
		// with the time it would take, where it ran silently.
		{[]string{"-loads", "50,0.0000001"}, "-loads 1e-07: a point sends its 22300 calls in real time"},
		{[]string{"-loads", "1", "-calls", "1000000"}, "takes about 24 hours; the most is 6h0m0s"},
		// A hedge delay no setup of the run reads was ignored without a word (the default
		// setups, no hedge and recommended, have none): refused, as -balancer is with one server.
		{[]string{"-hedge-delay", "5ms"}, `-hedge-delay is the delay of the fixed-delay setups (After), and none of -setups "no hedge;recommended" is one`},
		{[]string{"-hedge-delay", "5ms", "-setups", "recommended;server-assisted"}, "-hedge-delay is the delay of the fixed-delay setups"},
		// A closed loop whose callers can queue calls has a twin at or above capacity, and
		// every point read as a disagreement (16 callers on 16 workers: twins at 96-97 %).
		{[]string{"-concurrency", "16"}, "-workers × -replicas (16) must be above the attempts the callers can have in flight (32, 2 a call): raise -workers to 33"},
		{[]string{"-concurrency", "16", "-replicas", "4", "-workers", "8"}, "-workers × -replicas (32) must be above the attempts the callers can have in flight (32, 2 a call): raise -workers to 9"},
		// Three attempts a call at once: 24 in flight from 8 callers.
		{[]string{"-concurrency", "8", "-workers", "17", "-setups", "3 attempts, no budget"}, "(24, 3 a call): raise -workers to 25"},
		// -loads was ignored by a closed loop, whose load is the rate its callers reach.
		{[]string{"-loads", "0.0000001", "-concurrency", "8", "-workers", "17"}, "-loads does not apply to a closed loop (-concurrency 8)"},
	} {
		_, err := parseArgs(c.args, &bytes.Buffer{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{
		{"-calls", "1000000"}, {"-replicas", "2", "-balancer", "random"}, {"-replicas", "2"},
		{"-hedge-delay", "10µs", "-time-scale", "0.1", "-setups", "hedge, no budget"}, {"-hedge-delay", "5ms", "-setups", "no hedge;hedge, budget 5 %"},
		{"-hedge-delay", "5ms", "-setups", "all"}, {"-service", "Stragglers"}, {"-service", " STRAGGLERS "},
		{"-loads", "1"}, {"-loads", "1", "-calls", "1000000", "-time-scale", "0.1"}, {"-concurrency", "8", "-workers", "17"},
	} {
		c, err := parseArgs(args, &bytes.Buffer{})
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if strings.Contains(strings.ToLower(args[1]), "stragglers") && c.run.service.String() != stragglers().String() {
			t.Errorf("%q: service %v, want the stragglers server", args, c.run.service)
		}
	}
	var help bytes.Buffer
	parseArgs([]string{"-h"}, &help)
	if !strings.Contains(help.String(), "in [100, 1000000]") {
		t.Error("-h does not state the -calls limit")
	}
}

// An -out that cannot be written is a usage error found before the run (here, before a
// cancelled one gives up), not after it: a run of minutes was lost to it. A run that then
// writes nothing leaves no directory behind.
func TestOutCheckedBeforeRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no load is sent
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-calls", "100", "-loads", "50", "-setups", "no hedge", "-cancellation", "ignored", "-quiet"}
	var stdout, stderr bytes.Buffer
	if code := runMain(ctx, append(args, "-out", filepath.Join(file, "sub")), &stdout, &stderr, false); code != 2 ||
		!strings.Contains(stderr.String(), "hedgeload: -out: ") {
		t.Errorf("-out under a file: exit %d, stderr %q; want 2 naming -out", code, stderr.String())
	}
	out := filepath.Join(t.TempDir(), "a", "b")
	stderr.Reset()
	if code := runMain(ctx, append(args, "-out", out), &stdout, &stderr, false); code != 1 {
		t.Errorf("cancelled run: exit %d, want 1 (stderr %q)", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Errorf("a cancelled run left -out's directories behind (%v)", err)
	}
}
