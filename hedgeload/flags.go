package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/sim"
)

// Defaults: the standard comparison of the reference model (about 20,000 measured calls per
// point, the two setups that matter most, the loads where hedging is meant to help).
const (
	defaultCalls    = 22300 // 10 % warm up: 20,070 measured calls
	defaultSeeds    = "1"
	defaultLoads    = "30,50,70"
	defaultSetups   = sim.SetupNoHedge + ";" + sim.SetupRecommended
	defaultOut      = "hedgeload-report"
	defaultWorkers  = 16
	defaultDelay    = 20 * time.Millisecond
	defaultBand     = 15.0
	defaultMaxLag   = 100 * time.Millisecond
	defaultParallel = 4
)

// usageError is a bad command line: the command prints it and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

const usageText = `Usage: hedgeload [flags]

hedgeload checks the simulator against real servers. It starts HTTP servers on loopback (each a
hedgehttp.Queue of -workers workers whose handler holds its worker for a service time drawn from
the model), drives open-loop Poisson load at them through hedgehttp.Transport with the
simulator's setups, simulates the same points with the simulator, and writes report.md,
report.html and report.json into -out with the real and simulated figures side by side.

Latency is measured from each call's due time. A run whose generator falls behind its schedule
(-max-lag) or whose client cannot keep up stops and says so. The exit status is 0 when every
point agrees within -band, 1 when one does not or the run stopped, 2 for a bad command line.

Examples:
  hedgeload                                   # the standard comparison (about 3 minutes)
  hedgeload -calls 3000 -loads 50 -time-scale 0.5
  hedgeload -protocol both -cancellation ignored

Flags:
`

// config is the parsed command line.
type config struct {
	run      runConfig
	out      string
	progress bool
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("hedgeload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	calls := fs.Int("calls", defaultCalls, "calls per point; the first 10% are not measured")
	seeds := fs.String("seeds", defaultSeeds, "comma-separated seeds, one point each")
	loads := fs.String("loads", defaultLoads, "comma-separated loads in % of worker capacity without hedges, each in (0, 100)")
	setupList := fs.String("setups", defaultSetups, "setups to run, separated by ';' (hedgesim's names), or all")
	cancel := fs.String("cancellation", "both", "cancellation mode: ignored (the handler finishes regardless), reaches (it stops when cancelled) or both")
	protocol := fs.String("protocol", "http/2", "protocol: http/1.1, http/2 (cleartext) or both")
	out := fs.String("out", defaultOut, "directory to write report.md, report.html and report.json into")
	workers := fs.Int("workers", defaultWorkers, "workers per server")
	replicas := fs.Int("replicas", 1, "servers, each with -workers workers and its own queue (1: the reference model)")
	balancer := fs.String("balancer", "p2c", "with -replicas > 1, how the client picks a replica: random, round-robin, least-outstanding or p2c")
	svc := fs.String("service", "mixture", "service time: mixture (the reference model), exponential:MEAN or empirical:FILE (one duration per line)")
	delay := fs.Duration("hedge-delay", defaultDelay, "hedge delay of the fixed-delay setups (After)")
	scale := fs.Float64("time-scale", 1, "multiply every time of the model by this, in [0.1, 1], to run faster; figures are reported in the model's time")
	parallel := fs.Int("parallel", defaultParallel, "points run at once (each has its own servers and client)")
	band := fs.Float64("band", defaultBand, "agreement band: a real p50/p99/p99.9 agrees within ±band % of the simulated one")
	maxLag := fs.Duration("max-lag", defaultMaxLag, "stop when a call is sent later than this after it was due, or 1% of a point's calls later than a twentieth of it (wire time)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprint(stderr, usageText)
			fs.PrintDefaults()
			return config{}, err
		}
		return config{}, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return config{}, usagef("unexpected argument %q (flags only; quote a -setups list that has spaces)", fs.Arg(0))
	}
	c := config{out: *out, progress: !*quiet}
	r := &c.run
	r.calls, r.workers, r.replicas, r.hedgeDelay = *calls, *workers, *replicas, *delay
	r.timeScale, r.parallel, r.band, r.maxLag, r.warmup = *scale, *parallel, *band, *maxLag, 0.1
	switch {
	case r.calls < 100:
		return c, usagef("-calls must be >= 100, got %d", r.calls)
	case r.workers <= 0 || r.workers > 4096:
		return c, usagef("-workers must be in [1, 4096], got %d", r.workers)
	case r.replicas < 1 || r.replicas > 64:
		return c, usagef("-replicas must be in [1, 64], got %d", r.replicas)
	case r.hedgeDelay <= 0:
		return c, usagef("-hedge-delay must be > 0, got %v", r.hedgeDelay)
	case !(r.timeScale >= 0.1 && r.timeScale <= 1):
		return c, usagef("-time-scale must be in [0.1, 1], got %v", r.timeScale)
	case r.parallel <= 0:
		return c, usagef("-parallel must be >= 1, got %d", r.parallel)
	case !(r.band > 0) || math.IsInf(r.band, 0):
		return c, usagef("-band must be > 0, got %v", r.band)
	case r.maxLag <= 0:
		return c, usagef("-max-lag must be > 0, got %v", r.maxLag)
	case c.out == "":
		return c, usagef("-out must name a directory")
	}
	var err error
	if r.seeds, err = parseSeeds(*seeds); err != nil {
		return c, err
	}
	if r.loads, err = parseLoads(*loads); err != nil {
		return c, err
	}
	if r.setups, err = parseSetups(*setupList); err != nil {
		return c, err
	}
	switch strings.ToLower(strings.TrimSpace(*cancel)) {
	case "ignored":
		r.modes = []string{sim.Ignored}
	case "reaches":
		r.modes = []string{sim.Reaches}
	case "both":
		r.modes = []string{sim.Ignored, sim.Reaches}
	default:
		return c, usagef("-cancellation must be ignored, reaches or both, got %q", *cancel)
	}
	switch strings.ToLower(strings.TrimSpace(*protocol)) {
	case "http/1.1", "http1.1", "http1", "h1":
		r.protocols = []string{HTTP1}
	case "http/2", "http2", "h2", "h2c":
		r.protocols = []string{HTTP2}
	case "both":
		r.protocols = []string{HTTP1, HTTP2}
	default:
		return c, usagef("-protocol must be http/1.1, http/2 or both, got %q", *protocol)
	}
	if r.replicas > 1 {
		if _, err := replica.ParseBalancer(*balancer); err != nil || !slices.Contains(sim.Balancers, *balancer) {
			return c, usagef("-balancer must be one of %s, got %q", strings.Join(sim.Balancers, ", "), *balancer)
		}
		r.balancer = *balancer
	}
	if r.service, err = parseService(*svc); err != nil {
		return c, err
	}
	return c, nil
}

func parseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, usagef("-seeds: %q is not a seed (a whole number >= 0)", f)
		}
		if slices.Contains(seeds, n) {
			return nil, usagef("-seeds: seed %d is listed twice", n)
		}
		seeds = append(seeds, n)
	}
	if len(seeds) == 0 {
		return nil, usagef("-seeds must list at least one seed")
	}
	return seeds, nil
}

func parseLoads(s string) ([]float64, error) {
	var loads []float64
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "%")); f == "" {
			continue
		}
		l, err := strconv.ParseFloat(f, 64)
		if err != nil || !(l > 0 && l < 100) {
			return nil, usagef("-loads: each load is a %% of worker capacity in (0, 100), got %q", f)
		}
		if slices.Contains(loads, l) {
			return nil, usagef("-loads: load %v is listed twice", l)
		}
		loads = append(loads, l)
	}
	if len(loads) == 0 {
		return nil, usagef("-loads must list at least one load")
	}
	return loads, nil
}

// parseSetups resolves a ';'-separated list of the simulator's setup names, ignoring case and
// spaces; "all" is every setup.
func parseSetups(s string) ([]string, error) {
	var names []string
	for _, st := range sim.Setups(0) {
		names = append(names, st.Name)
	}
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return names, nil
	}
	key := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }
	var out []string
	for f := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		i := slices.IndexFunc(names, func(n string) bool { return key(n) == key(f) })
		if i < 0 {
			return nil, usagef("-setups: unknown setup %q; the setups are:\n  %s", strings.TrimSpace(f), strings.Join(names, "\n  "))
		}
		if slices.Contains(out, names[i]) {
			return nil, usagef("-setups: setup %q is listed twice", names[i])
		}
		out = append(out, names[i])
	}
	if len(out) == 0 {
		return nil, usagef("-setups must name at least one setup, or all")
	}
	return out, nil
}

// parseService parses -service as hedgesim does.
func parseService(s string) (sim.Distribution, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch strings.ToLower(kind) {
	case "mixture":
		if hasArg {
			return nil, usagef("-service mixture takes no argument, got %q", s)
		}
		return sim.ReferenceMixture(), nil
	case "exponential":
		d, err := time.ParseDuration(strings.TrimSpace(arg))
		if !hasArg || err != nil || d <= 0 {
			return nil, usagef("-service exponential:MEAN needs a mean duration > 0, e.g. exponential:10ms; got %q", s)
		}
		return sim.Exponential{MeanTime: d}, nil
	case "empirical":
		if !hasArg || arg == "" {
			return nil, usagef("-service empirical:FILE needs a file of durations, one per line; got %q", s)
		}
		f, err := os.Open(arg)
		if err != nil {
			return nil, usagef("-service empirical: %v", err)
		}
		defer f.Close()
		ds, err := parseDurations(f, arg)
		if err != nil {
			return nil, err
		}
		return sim.Empirical{Samples: ds}, nil
	}
	return nil, usagef("-service must be mixture, exponential:MEAN or empirical:FILE, got %q", s)
}

// parseDurations reads one service time per line: a Go duration or a bare number of ms;
// blank lines and text after '#' are ignored.
func parseDurations(r io.Reader, name string) ([]time.Duration, error) {
	var ds []time.Duration
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		t, _, _ := strings.Cut(sc.Text(), "#")
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			ms, err2 := strconv.ParseFloat(t, 64)
			if err2 != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > 1e9 {
				return nil, usagef("-service empirical: %s:%d: %q is not a duration (e.g. 12ms) or a number of ms", name, line, t)
			}
			d = time.Duration(ms * float64(time.Millisecond))
		}
		if d < 0 {
			return nil, usagef("-service empirical: %s:%d: a service time must be >= 0, got %v", name, line, d)
		}
		ds = append(ds, d)
	}
	if err := sc.Err(); err != nil {
		return nil, usagef("-service empirical: %s: %v", name, err)
	}
	if !slices.ContainsFunc(ds, func(d time.Duration) bool { return d > 0 }) {
		return nil, usagef("-service empirical: %s holds no service time above 0", name)
	}
	return ds, nil
}
