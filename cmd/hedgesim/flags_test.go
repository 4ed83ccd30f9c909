package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testNames stands in for the simulator's setups, so these tests do not need the engine.
var testNames = []string{
	"no hedge",
	"hedge, no budget",
	"hedge, default budget",
	"hedge, budget 5 %",
	"hedge, default budget, adaptive limit",
	"3 attempts, no budget",
	"recommended",
}

var testFamilies = []string{"reference", "bursty", "few-workers"}

func TestParseDefaults(t *testing.T) {
	cfg, err := parseArgs(nil, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.calls != 200000 || !slices.Equal(cfg.seeds, []uint64{1, 2}) ||
		!slices.Equal(cfg.loads, []float64{30, 50, 70, 85, 95}) || !slices.Equal(cfg.setups, testNames) ||
		!slices.Equal(cfg.modes, []string{"ignored", "reaches"}) || cfg.out != "hedgesim-report" ||
		cfg.workers != 16 || cfg.service.Kind != "mixture" || cfg.hedgeDelay != 20*time.Millisecond ||
		cfg.tablesOnly || cfg.from != "" {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseArgs([]string{
		"-calls", "5000", "-seeds", "2, 1", "-loads", "95,30%,62.5",
		"-setups", "Hedge, default budget ; no  hedge;hedge, budget 5 %",
		"-cancellation", "reaches", "-out", "x/y", "-workers", "8",
		"-service", "exponential:12ms", "-hedge-delay", "35ms", "-tables-only",
	}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.calls != 5000 || !slices.Equal(cfg.seeds, []uint64{2, 1}) || !slices.Equal(cfg.loads, []float64{95, 30, 62.5}) ||
		!slices.Equal(cfg.setups, []string{"hedge, default budget", "no hedge", "hedge, budget 5 %"}) ||
		!slices.Equal(cfg.modes, []string{"reaches"}) || cfg.out != "x/y" || cfg.workers != 8 ||
		cfg.service.Kind != "exponential" || cfg.service.Mean != 12*time.Millisecond ||
		cfg.hedgeDelay != 35*time.Millisecond || !cfg.tablesOnly {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseArgs([]string{"-cancellation", "ignored", "-setups", "all"}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil || !slices.Equal(cfg.modes, []string{"ignored"}) || !slices.Equal(cfg.setups, testNames) {
		t.Errorf("-cancellation ignored -setups all: %+v, %v", cfg, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"-calls", "0"}, "-calls must be > 0 and at most 20000000, got 0"},
		{[]string{"-calls", "x"}, `invalid value "x" for flag -calls`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-seeds", ""}, "-seeds: must list at least one seed"},
		{[]string{"-seeds", "1,-2"}, `-seeds: "-2" is not a seed`},
		{[]string{"-seeds", "1,1"}, "seed 1 is listed twice"},
		{[]string{"-loads", "0"}, "in (0, 100), got 0"},
		{[]string{"-loads", "100"}, "in (0, 100), got 100"},
		{[]string{"-loads", "50,120"}, "in (0, 100), got 120"},
		{[]string{"-loads", "NaN"}, `"NaN" is not a number`},
		{[]string{"-loads", "fifty"}, `"fifty" is not a number`},
		{[]string{"-loads", "50,50"}, "load 50 is listed twice"},
		{[]string{"-loads", ","}, "-loads: must list at least one load"},
		{[]string{"-setups", "no hedge;turbo"}, `unknown setup "turbo"; the setups are:` + "\n  no hedge\n  hedge, no budget"},
		{[]string{"-setups", "no hedge;no hedge"}, `setup "no hedge" is listed twice`},
		{[]string{"-setups", ";"}, "-setups: must name at least one setup"},
		{[]string{"-cancellation", "sometimes"}, "-cancellation must be ignored, reaches or both"},
		{[]string{"-workers", "0"}, "-workers must be > 0"},
		{[]string{"-hedge-delay", "0s"}, "-hedge-delay must be > 0"},
		{[]string{"-hedge-delay", "-1ms"}, "-hedge-delay must be > 0"},
		{[]string{"-service", "gamma"}, "-service must be mixture, exponential:MEAN or empirical:FILE"},
		{[]string{"-service", "exponential"}, "exponential:MEAN needs a mean duration > 0"},
		{[]string{"-service", "exponential:0s"}, "exponential:MEAN needs a mean duration > 0"},
		{[]string{"-service", "exponential:ten"}, "exponential:MEAN needs a mean duration > 0"},
		{[]string{"-service", "mixture:2"}, "mixture takes no argument"},
		{[]string{"-service", "empirical:"}, "empirical:FILE needs a file"},
		{[]string{"-service", "empirical:/does/not/exist"}, "no such file"},
		{[]string{"-out", ""}, "-out must name a directory"},
		{[]string{"-timeline"}, "-timeline follows one run of each setup: give one -loads, one -seeds and -cancellation"},
		{[]string{"-timeline", "-loads", "70", "-seeds", "1"}, "-timeline follows one run"}, // both modes
		{[]string{"-timeline", "-loads", "70,95", "-seeds", "1", "-cancellation", "ignored"}, "-timeline follows one run"},
		{[]string{"-timeline", "-scorecard", "-loads", "70", "-seeds", "1", "-cancellation", "ignored"}, "-timeline runs on its own"},
	} {
		var stderr bytes.Buffer
		_, err := parseArgs(c.args, testNames, testFamilies, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v is not a usage error", c.args, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q does not contain %q", c.args, err, c.want)
		}
		if stderr.Len() != 0 {
			t.Errorf("%q: parseArgs printed %q; errors are the caller's to print", c.args, stderr.String())
		}
	}
}

func TestParseHelp(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseArgs([]string{"-h"}, testNames, testFamilies, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: error %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: hedgesim", "-calls", "-cancellation", "-service", "hedge, default budget, adaptive limit"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("usage lacks %q", want)
		}
	}
}

func TestParseEmpirical(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lat.txt")
	if err := os.WriteFile(path, []byte("# measured\n12ms\n\n 3.5ms # fast\n1.5s\n7\n0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"-service", "empirical:" + path}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{12 * time.Millisecond, 3500 * time.Microsecond, 1500 * time.Millisecond, 7 * time.Millisecond, 0}
	if cfg.service.Kind != "empirical" || cfg.service.File != path || !slices.Equal(cfg.service.Samples, want) {
		t.Errorf("empirical service = %+v, want samples %v", cfg.service, want)
	}

	// A bad file is a usage error that names the flag, the file and the line (the grammar's
	// cases are tested in package sim).
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("12ms\nabc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = parseArgs([]string{"-service", "empirical:" + bad}, testNames, testFamilies, &bytes.Buffer{})
	var ue *usageError
	if want := "-service empirical: " + bad + `:2: "abc" is not a duration`; !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
		t.Errorf("bad empirical file: error %v, want a usage error containing %q", err, want)
	}
}

// FuzzParseArgs: whatever the command line, parseArgs either fails with a usage error (or
// ErrHelp) or returns a config that keeps every rule.
func FuzzParseArgs(f *testing.F) {
	f.Add("7", "1,2", "30,50", "no hedge;all", "both", "exponential:3ms")
	f.Add("-1", "", "0,100", "x", "never", "empirical:")
	f.Add("100", "18446744073709551615", "99.999,1e-300", "hedge, budget 5 %", "IGNORED", "mixture")
	f.Fuzz(func(t *testing.T, calls, seeds, loads, setups, cancel, svc string) {
		if strings.HasPrefix(svc, "empirical") {
			return // reads files
		}
		cfg, err := parseArgs([]string{"-calls", calls, "-seeds", seeds, "-loads", loads, "-setups", setups,
			"-cancellation", cancel, "-service", svc}, testNames, testFamilies, &bytes.Buffer{})
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		if cfg.calls <= 0 || len(cfg.seeds) == 0 || len(cfg.loads) == 0 || len(cfg.setups) == 0 || len(cfg.modes) == 0 {
			t.Fatalf("accepted an empty or non-positive setting: %+v", cfg)
		}
		for _, l := range cfg.loads {
			if !(l > 0 && l < 100) {
				t.Fatalf("accepted load %v", l)
			}
		}
		for _, s := range cfg.setups {
			if !slices.Contains(testNames, s) {
				t.Fatalf("accepted unknown setup %q", s)
			}
		}
		if cfg.service.Kind == "exponential" && cfg.service.Mean <= 0 {
			t.Fatalf("accepted mean %v", cfg.service.Mean)
		}
	})
}

// TestDeadlineFlag: -deadline reaches the sweep as every call's deadline (sim's Timeout).
func TestDeadlineFlag(t *testing.T) {
	cfg, err := parseArgs([]string{"-deadline", "50ms", "-setups", "no hedge;recommended"}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.sweepConfig(); sc.Timeout != 50*time.Millisecond {
		t.Errorf("-deadline 50ms: sweep Timeout %v", sc.Timeout)
	}
}

func TestParseModelFlags(t *testing.T) {
	cfg, err := parseArgs([]string{"-family", "bursty", "-clients", "3", "-replicas", "4", "-balancer", "p2c, random",
		"-tie-delay", "1ms"}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.family != "bursty" || cfg.clients != 3 || cfg.replicas != 4 || !slices.Equal(cfg.balancers, []string{"p2c", "random"}) ||
		cfg.tieDelay != time.Millisecond || cfg.scorecard {
		t.Errorf("config = %+v", cfg)
	}
	cfg, err = parseArgs([]string{"-scorecard", "-families", "reference,few-workers"}, testNames, testFamilies, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.scorecard || !slices.Equal(cfg.families, []string{"reference", "few-workers"}) ||
		!slices.Equal(cfg.setups, []string{"recommended"}) || cfg.calls != defaultScorecardCalls {
		t.Errorf("config = %+v", cfg)
	}
	for _, args := range [][]string{
		{"-replicas", "65"}, {"-clients", "-1"}, {"-tie-delay", "-1ms"}, {"-balancer", "p2c,best"}, {"-families", "reference,cloudy"},
		{"-deadline", "-1ms"}, {"-deadline", "50ms", "-scorecard"},
	} {
		if _, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// A scorecard's families have their own model: a flag of a sweep's model is refused with
// -scorecard, not ignored.
func TestScorecardRefusesModelFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workers", "8"}, {"-service", "exponential:10ms"}, {"-hedge-delay", "5ms"}, {"-family", "bursty"},
		{"-clients", "3"}, {"-client-inflight", "2", "-loads", "10"}, {"-replicas", "4"}, {"-replicas", "4", "-balancer", "random"}, {"-tie-delay", "1ms"},
	} {
		if _, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{}); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		_, err := parseArgs(append(args, "-scorecard"), testNames, testFamilies, &bytes.Buffer{})
		if want := args[0] + " does not apply to -scorecard"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q with -scorecard: error %v, want one saying %q", args, err, want)
		}
	}
}

// The model's limits are the command's usage errors, each naming its flag: they reached the
// simulator and came back as "run failed" with its message, and workers too many for their
// replicas blamed -replicas, in range at 64.
func TestParseModelLimits(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-workers", "2000000"}, "-workers must be > 0 and at most 1048576, got 2000000"},
		{[]string{"-clients", "70000"}, "-clients must be in [1, 16384], or 0 for the family's (1 in the reference model), got 70000"},
		{[]string{"-clients", "-1"}, "-clients must be in [1, 16384], or 0 for the family's"},
		{[]string{"-clients", "4096", "-calls", "2000"}, "-clients 4096 is more than -calls 2000: each call goes to a client drawn at random"},
		{[]string{"-replicas", "65"}, "-replicas must be in [1, 64], or 0 for the family's (1 in the reference model), got 65"},
		{[]string{"-replicas", "64", "-workers", "20000"}, "-replicas × -workers must be at most 1048576 workers in all, got -replicas 64 × -workers 20000 = 1280000"},
		{[]string{"-family", "replica-pause", "-workers", "300000"}, "got the family's 4 replicas × -workers 300000 = 1200000"},
		{[]string{"-calls", "20000001"}, "-calls must be > 0 and at most 20000000, got 20000001"},
		{[]string{"-tie-delay", "-1ms"}, "-tie-delay must be >= 0, got -1ms"},
	} {
		_, err := parseArgs(c.args, testNames, []string{"reference", "replica-pause"}, &bytes.Buffer{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{
		{"-replicas", "64", "-workers", "16384"}, {"-clients", "16384"}, {"-clients", "2000", "-calls", "2000"}, {"-clients", "0"}, {"-calls", "20000000"},
	} {
		if _, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{}); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	var help bytes.Buffer
	parseArgs([]string{"-h"}, testNames, testFamilies, &help)
	for _, want := range []string{"at most 20000000", "at most 1048576 in all", "at most 16384", "at most 64"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h does not state the limit %q", want)
		}
	}
}

// A -balancer with one server chose nothing and was ignored; it is refused, and its name is
// checked whatever the replicas.
func TestParseBalancerNeedsReplicas(t *testing.T) {
	fams := []string{"reference", "replica-pause"}
	for _, c := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"-balancer", "random"}, "-balancer needs -replicas > 1"},
		{[]string{"-balancer", "random", "-replicas", "1"}, "-balancer needs -replicas > 1"},
		{[]string{"-balancer", "bogus"}, `-balancer must be random, round-robin, least-outstanding, p2c (or several, or all), got "bogus"`},
		{[]string{"-balancer", "random", "-replicas", "2"}, ""},
		{[]string{"-balancer", "all", "-family", "replica-pause"}, ""}, // the family's 4 replicas
		{[]string{"-replicas", "4"}, ""},
	} {
		_, err := parseArgs(c.args, testNames, fams, &bytes.Buffer{})
		var ue *usageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}

// -scorecard writes scorecard files from a run of its own: with -from or -tables-only it
// ignored them, and ran minutes to write what neither asked for.
func TestParseScorecardAlone(t *testing.T) {
	for _, args := range [][]string{
		{"-scorecard", "-from", "report.json"}, {"-scorecard", "-tables-only"}, {"-tables-only", "-scorecard"},
	} {
		_, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{})
		var ue *usageError
		if want := "-scorecard runs the scorecard and writes its files: not with -from or -tables-only"; !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want a usage error containing %q", args, err, want)
		}
	}
}

// -tie-delay models a cancellation on its way to the server; with -cancellation ignored no
// cancellation is sent, so the flag would change nothing: it is refused, as other flags that
// would do nothing are.
func TestTieDelayNeedsCancellationThatReaches(t *testing.T) {
	_, err := parseArgs([]string{"-tie-delay", "1ms", "-cancellation", "ignored"}, testNames, testFamilies, &bytes.Buffer{})
	if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), "-tie-delay") {
		t.Errorf("-tie-delay 1ms -cancellation ignored: error %v, want a usage error naming -tie-delay", err)
	}
	for _, mode := range []string{"reaches", "both"} {
		cfg, err := parseArgs([]string{"-tie-delay", "1ms", "-cancellation", mode}, testNames, testFamilies, &bytes.Buffer{})
		if err != nil || cfg.tieDelay != time.Millisecond {
			t.Errorf("-tie-delay 1ms -cancellation %s: tie delay %v, error %v", mode, cfg.tieDelay, err)
		}
	}
}

// -from renders a report.json as it was written: a flag of a run given with it would change
// nothing, and was ignored without a word ("-from report.json -setups recommended" drew every
// setup), so it is refused and named; -out and -tables-only are what -from reads.
func TestFromRefusesTheFlagsOfARun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-from", "r.json", "-setups", "recommended"}, "-setups would change nothing"},
		{[]string{"-from", "r.json", "-loads", "30", "-calls", "2000"}, "-calls, -loads would change nothing"},
		{[]string{"-from", "r.json", "-config", "policy.yaml"}, "-config would change nothing"},
		{[]string{"-from", "r.json", "-seeds", "1", "-cancellation", "ignored"}, "-cancellation, -seeds would change nothing"},
		{[]string{"-from", "r.json", "-deadline", "50ms"}, "-deadline would change nothing"},
	} {
		_, err := parseArgs(c.args, testNames, testFamilies, &bytes.Buffer{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "r.json") {
			t.Errorf("%q: error %v, want a usage error naming r.json and containing %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{{"-from", "r.json"}, {"-from", "r.json", "-out", "x"}, {"-from", "r.json", "-tables-only"}} {
		if cfg, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{}); err != nil || cfg.from != "r.json" {
			t.Errorf("%q: from %q, error %v", args, cfg.from, err)
		}
	}
}

// TestClientSlotsTooFew: clients × -client-inflight at or below the calls a load keeps in
// service cannot carry it (the clients' own queues grow without end, no hedge's too), so the
// command line is refused rather than reported as every setup's collapse.
func TestClientSlotsTooFew(t *testing.T) {
	for _, args := range [][]string{
		{"-client-inflight", "1"},                                            // one sequential client, 95 % of 16 workers
		{"-client-inflight", "1", "-clients", "4", "-loads", "30"},           // 4.8 in service
		{"-clients", "7", "-client-inflight", "2", "-loads", "30,95"},        // 14 slots, 15.2 at 95 %
		{"-family", "fleet-sequential", "-workers", "64", "-loads", "50"},    // 32 slots, 32 in service
		{"-family", "fleet-sequential", "-replicas", "4", "-loads", "30,70"}, // 44.8 in service
	} {
		_, err := parseArgs(append(args, "-calls", "1000"), testNames, append(testFamilies, "fleet-sequential"), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "would fall behind in the clients' own queues") {
			t.Errorf("%q: err = %v, want the clients' slots refused", args, err)
		}
	}
	for _, args := range [][]string{
		{"-clients", "32", "-client-inflight", "1"}, // the README's: 32 slots, 15.2 in service
		{"-family", "fleet-sequential"},
		{"-clients", "4", "-client-inflight", "2", "-loads", "30"},
		{"-client-inflight", "0"},
	} {
		if _, err := parseArgs(append(args, "-calls", "1000"), testNames, append(testFamilies, "fleet-sequential"), &bytes.Buffer{}); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}
