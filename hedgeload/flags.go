package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/sim"
)

// Defaults: the standard comparison of the reference model (about 20,000 measured calls per
// point, the two setups that matter most, the loads where hedging is meant to help).
const (
	defaultCalls = 22300 // 10 % warm up: 20,070 measured calls
	// maxCalls bounds -calls: a point keeps about 300 B of accounts per call, and sends its
	// calls in real time, so a million (300 MB, about a quarter of an hour at 1,000 calls a
	// second) is the most a run of several points finishes in an afternoon; ten million took
	// almost three hours a point.
	maxCalls = 1_000_000
	// minScaledHedgeDelay is the shortest hedge delay the fixed-delay setups may run with on
	// the wire (-hedge-delay × -time-scale): shorter rounds to 0, which the setups read as
	// "the default" and ran with 20 ms instead.
	minScaledHedgeDelay = time.Microsecond
	// defaultClosedCalls is a closed loop's calls per point: 115,200 measured, so that its
	// p99.9 rests on 115 calls. With 20,070 the p99.9 of 64 callers against 2 % stragglers
	// rested on 20, and one stall of the machine moved it 30 % from one run to the next.
	defaultClosedCalls = 128000
	defaultSeeds       = "1"
	defaultLoads       = "30,50,70"
	defaultSetups      = sim.SetupNoHedge + ";" + sim.SetupRecommended
	defaultOut         = "hedgeload-report"
	defaultWorkers     = 16
	defaultDelay       = 20 * time.Millisecond
	defaultBand        = 15.0
	defaultMaxLag      = 100 * time.Millisecond
	defaultParallel    = 4
	// maxClients bounds -clients: each client keeps its own connections to every server.
	maxClients = 256
)

// usageError is a bad command line: the command prints it and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

const usageText = `Usage: hedgeload [flags]

hedgeload checks the simulator against real servers. It starts HTTP servers on loopback (each a
hedgehttp.Queue of -workers workers whose handler holds its worker for a service time drawn from
the model; with -protocol grpc, gRPC servers behind hedgegrpc's Queue), drives open-loop Poisson
load at them through hedgehttp.Transport (hedgegrpc's interceptor and balancer) with the
simulator's setups, simulates the same points with the simulator, and writes report.md,
report.html and report.json into -out with the real and simulated figures side by side.

Latency is measured from each call's due time. A run whose generator falls behind its schedule
(-max-lag) or whose client cannot keep up stops and says so. The exit status is 0 when every
point agrees (p99 and p99.9 within -band, p50 and utilisation within 5 %, the utilisation wider
over few calls), 1 when one does not or the run stopped, 2 for a bad command line.
-server-scale 1.1 runs servers 10 % slower than the model without telling the simulator: its
points should disagree.

Examples:
  hedgeload                                   # the standard comparison (about 2.5 minutes)
  hedgeload -calls 3000 -loads 50 -time-scale 0.5
  hedgeload -protocol both -cancellation ignored
  hedgeload -protocol grpc                    # the standard comparison over gRPC
  hedgeload -clients 32 -replicas 4 -workers 4 -cancellation ignored \
    -setups "no hedge;server-assisted;server-assisted, out-of-band"
                                              # a fleet: 32 thin clients on 4 replicas
  hedgeload -concurrency 64 -service stragglers -workers 256 -protocol both
                                              # a busy client, stragglers, no queue

Flags:
`

// config is the parsed command line.
type config struct {
	run      runConfig
	out      string
	progress bool
}

// parseArgs parses the command line into a run. It is long because it is the flag table:
// one declaration and one check per flag, read top to bottom.
func parseArgs(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("hedgeload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	calls := fs.Int("calls", defaultCalls, fmt.Sprintf("calls per point, in [100, %d]; the first 10%% are not measured (%d with -concurrency)", maxCalls, defaultClosedCalls))
	seeds := fs.String("seeds", defaultSeeds, "comma-separated seeds, one point each")
	loads := fs.String("loads", defaultLoads, "comma-separated loads in % of worker capacity without hedges, each in (0, 100)")
	setupList := fs.String("setups", defaultSetups, "setups to run, separated by ';' (hedgesim's names), or all")
	cancel := fs.String("cancellation", "both", "cancellation mode: ignored (the handler finishes regardless), reaches (it stops when cancelled) or both")
	protocol := fs.String("protocol", "http/2", "protocol: http/1.1, http/2 (cleartext), both (the two) or grpc (a unary method through hedgegrpc.DialOptions)")
	out := fs.String("out", defaultOut, "directory to write report.md, report.html and report.json into")
	workers := fs.Int("workers", defaultWorkers, "workers per server")
	replicas := fs.Int("replicas", 1, "servers, each with -workers workers and its own queue, at most 64 (1: the reference model)")
	clients := fs.Int("clients", 1, "independent clients, each a Transport (over gRPC, a connection) with policies of its own and its own view\n"+
		"of the servers; each call goes to one at random, as with hedgesim's -clients (in a closed loop, each caller's next call too);\n"+
		fmt.Sprintf("at most %d (hedgesim's -clients goes further)", maxClients))
	balancer := fs.String("balancer", "p2c", "how the client picks a replica: random, round-robin, least-outstanding or p2c; it needs -replicas > 1\n"+
		"(over gRPC, hedgegrpc's balancer picks, by p2c: leave it out)")
	svc := fs.String("service", "mixture", "service time: mixture (the reference model), exponential:MEAN, empirical:FILE (one duration per line)\n"+
		"or stragglers (at once, except 2% of requests that stall 100ms)")
	delay := fs.Duration("hedge-delay", defaultDelay, "hedge delay of the fixed-delay setups (After; refused when -setups names none); times -time-scale, at least 1µs")
	scale := fs.Float64("time-scale", 1, "multiply every time of the model by this, in [0.1, 1], to run faster; figures are reported in the model's time")
	parallel := fs.Int("parallel", defaultParallel, "points run at once (each has its own servers and client); lower it when a run falls behind (a closed loop runs one at a time)")
	serverScaleF := fs.Float64("server-scale", 1, "a diagnostic: the real servers multiply every drawn service time by this (the simulator is not told), to show the comparison can fail; in [0.5, 2]")
	band := fs.Float64("band", defaultBand, "agreement band: a real p99/p99.9 agrees within ±band % of the simulated one (the p50 within ±5 %, or band if smaller; the utilisation within ±5 % of its same-seed twin's, wider over few calls)")
	maxLag := fs.Duration("max-lag", defaultMaxLag, "stop when a call is sent later than this after it was due, or 1% of a point's calls later than a twentieth of it (wire time)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	concurrency := fs.Int("concurrency", 0, "closed loop: this many callers, each sending its next call when its last ends, instead of\n"+
		"open-loop load (with no -loads: each point's load is the rate the callers reached); -workers × -replicas must be above\n"+
		"the attempts they can have in flight, twice this for most setups (no call waits for a worker); with -service stragglers,\n"+
		"a busy client against stragglers and no queue")
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
	r.calls, r.workers, r.replicas, r.clients, r.hedgeDelay = *calls, *workers, *replicas, *clients, *delay
	r.timeScale, r.parallel, r.band, r.maxLag, r.warmup = *scale, *parallel, *band, *maxLag, 0.1
	r.serverScale = *serverScaleF
	switch {
	case r.calls < 100 || r.calls > maxCalls:
		return c, usagef("-calls must be in [100, %d], got %d", maxCalls, r.calls)
	case r.workers <= 0 || r.workers > 4096:
		return c, usagef("-workers must be in [1, 4096], got %d", r.workers)
	case r.replicas < 1 || r.replicas > 64:
		return c, usagef("-replicas must be in [1, 64], got %d", r.replicas)
	case r.clients < 1 || r.clients > maxClients:
		return c, usagef("-clients must be in [1, %d], got %d", maxClients, r.clients)
	case r.clients > r.calls:
		return c, usagef("-clients %d is more than -calls %d: each call goes to a client drawn at random, and many clients would make none", r.clients, r.calls)
	case r.hedgeDelay <= 0:
		return c, usagef("-hedge-delay must be > 0, got %v", r.hedgeDelay)
	case !(r.timeScale >= 0.1 && r.timeScale <= 1):
		return c, usagef("-time-scale must be in [0.1, 1], got %v", r.timeScale)
	case time.Duration(float64(r.hedgeDelay)*r.timeScale) < minScaledHedgeDelay:
		return c, usagef("-hedge-delay × -time-scale must be at least %v, got %v × %g = %v",
			minScaledHedgeDelay, r.hedgeDelay, r.timeScale, time.Duration(float64(r.hedgeDelay)*r.timeScale))
	case !(r.serverScale >= 0.5 && r.serverScale <= 2):
		return c, usagef("-server-scale must be in [0.5, 2], got %v", r.serverScale)
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
	if r.seeds, err = sim.ParseSeeds(*seeds); err != nil {
		return c, flagError("seeds", err)
	}
	if r.loads, err = sim.ParseLoads(*loads); err != nil {
		return c, flagError("loads", err)
	}
	if r.setups, err = sim.ParseSetups(*setupList, realSetupNames()); err != nil {
		return c, flagError("setups", err)
	}
	// Like -balancer with one server, a -hedge-delay that no setup of the run reads (the
	// default setups, no hedge and recommended, have none) is refused, not ignored.
	delaySet := false
	fs.Visit(func(f *flag.Flag) { delaySet = delaySet || f.Name == "hedge-delay" })
	if delaySet && !usesHedgeDelay(r.setups) {
		return c, usagef("-hedge-delay is the delay of the fixed-delay setups (After), and none of -setups %q is one: add one (e.g. %q) or leave -hedge-delay out",
			strings.Join(r.setups, ";"), sim.SetupNoBudget)
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
	// The balancer's name is checked whatever the replicas, and one given with a single server
	// (it has nothing to choose from) is refused, not ignored.
	balancerSet := false
	fs.Visit(func(f *flag.Flag) { balancerSet = balancerSet || f.Name == "balancer" })
	if _, err := replica.ParseBalancer(*balancer); err != nil || !slices.Contains(sim.Balancers, *balancer) {
		return c, usagef("-balancer must be one of %s, got %q", strings.Join(sim.Balancers, ", "), *balancer)
	}
	if balancerSet && r.replicas <= 1 {
		return c, usagef("-balancer needs -replicas > 1: with one server there is nothing to choose")
	}
	switch strings.ToLower(strings.TrimSpace(*protocol)) {
	case "http/1.1", "http1.1", "http1", "h1":
		r.protocols = []string{HTTP1}
	case "http/2", "http2", "h2", "h2c":
		r.protocols = []string{HTTP2}
	case "both":
		r.protocols = []string{HTTP1, HTTP2}
	case "grpc":
		if balancerSet {
			return c, usagef("-protocol grpc routes by hedgegrpc's balancer (p2c): leave -balancer out")
		}
		r.protocols = []string{GRPC}
	default:
		return c, usagef("-protocol must be http/1.1, http/2, both (the two) or grpc, got %q", *protocol)
	}
	if r.replicas > 1 && r.protocols[0] != GRPC {
		r.balancer = *balancer
	}
	if r.callers = *concurrency; r.callers < 0 || r.callers > 4096 {
		return c, usagef("-concurrency must be in [0, 4096], got %d", r.callers)
	} else if r.callers > 0 {
		loadsSet := false
		fs.Visit(func(f *flag.Flag) { loadsSet = loadsSet || f.Name == "loads" })
		if loadsSet {
			return c, usagef("-loads does not apply to a closed loop (-concurrency %d): each point's load is the rate its callers reach; leave -loads out", r.callers)
		}
		r.loads = []float64{0} // measured per point
		callsSet := false
		fs.Visit(func(f *flag.Flag) { callsSet = callsSet || f.Name == "calls" })
		if !callsSet {
			r.calls = defaultClosedCalls
		}
	}
	// stragglers is this command's own kind, beside the simulator's; like theirs, it is
	// matched ignoring case, and an unknown kind is told all four.
	kind, _, hasArg := strings.Cut(strings.TrimSpace(*svc), ":")
	switch kind = strings.ToLower(kind); {
	case kind == stragglersName && hasArg:
		return c, usagef("-service stragglers takes no argument, got %q", *svc)
	case kind == stragglersName:
		r.service = stragglers()
		return c, checkRun(r)
	case kind != sim.ServiceMixture && kind != sim.ServiceExponential && kind != sim.ServiceEmpirical:
		return c, usagef("-service must be mixture, exponential:MEAN, empirical:FILE or %s, got %q", stragglersName, *svc)
	}
	spec, err := sim.ParseService(*svc)
	if err != nil {
		return c, usagef("-service %v", err)
	}
	r.service = spec.Distribution()
	return c, checkRun(r)
}

// maxPointPace bounds how long one point of an open loop takes to send its calls: they go out
// in real time at the load's rate, so a tiny load (-loads 0.001) would run for days without a
// word, and one small enough overflows the point's deadline. Six hours is twelve times what
// the default 22,300 calls take at 1 % of the reference model's capacity (about half an hour);
// a million calls, the most -calls allows, fit in it from about 5 %. A closed loop's calls go
// out as fast as they are served, and a long enough service time does the same.
const maxPointPace = 6 * time.Hour

// checkPace refuses an open loop whose lowest load would take longer than maxPointPace to send
// a point's calls, and a closed loop whose callers could not send them in that time even were
// every call served at once and in its mean service time, naming the time it would take.
func checkPace(r *runConfig) error {
	mean := r.service.Mean().Seconds() * r.timeScale // on the wire
	if r.callers > 0 {
		// A closed loop sends as fast as its callers get answers: at most min(callers, workers)
		// calls are served at once, each for the mean service time at the least.
		at := min(r.callers, r.workers*r.replicas)
		if secs := float64(r.calls) * mean / float64(at); secs > maxPointPace.Seconds() {
			return usagef("-concurrency %d: a point's %d calls, %d served at once at the most, take at least %.0f hours; the most is %v: lower -calls or the service time, or raise -concurrency",
				r.callers, r.calls, at, secs/3600, maxPointPace)
		}
		return nil
	}
	for _, l := range r.loads {
		secs := float64(r.calls) / (l / 100 * float64(r.workers*r.replicas) / mean)
		if secs > maxPointPace.Seconds() {
			return usagef("-loads %v: a point sends its %d calls in real time, and at %v %% of %d workers' capacity that takes about %.0f hours; the most is %v: raise the load or lower -calls",
				l, r.calls, l, r.workers*r.replicas, secs/3600, maxPointPace)
		}
	}
	return nil
}

// checkRun refuses a run whose calibration or whose points would take longer than
// maxPointPace (see checkPace and checkCalibration).
func checkRun(r *runConfig) error {
	if err := checkPace(r); err != nil {
		return err
	}
	if err := checkCalibration(r); err != nil {
		return err
	}
	return checkClosedLoopRoom(r)
}

// checkClosedLoopRoom refuses a closed loop whose callers can make calls wait for a worker:
// its simulated twin is an open loop at the rate the callers reached, which holds only where
// no call queues, hedges included (see runCallers), that is with more workers than the
// attempts the callers can have in flight (each call's MaximumConcurrent, 2 for most setups,
// the largest of the run's setups). With fewer the twin runs at or above capacity (16 callers
// on the default 16 workers: a twin at 97 % load, p50 24.9 ms against the real 10.3), and
// every point read as a disagreement the servers did not cause. Behind replicas the workers
// are counted together: a balancer that sends one replica more than its share can still make
// a call wait there, so there the rule is necessary, not sufficient.
func checkClosedLoopRoom(r *runConfig) error {
	if r.callers == 0 {
		return nil
	}
	per := 2
	for _, st := range sim.Setups(r.hedgeDelay) {
		if slices.Contains(r.setups, st.Name) {
			per = max(per, st.Config.MaximumConcurrent)
		}
	}
	if have, need := r.workers*r.replicas, per*r.callers; have <= need {
		return usagef("-concurrency %d: the closed loop's simulated twin holds only where no call waits for a worker, hedges included, "+
			"so -workers × -replicas (%d) must be above the attempts the callers can have in flight (%d, %d a call): raise -workers to %d or lower -concurrency",
			r.callers, have, need, per, need/r.replicas+1)
	}
	return nil
}

// checkCalibration refuses a run whose calibration would take longer than maxPointPace before
// its first point, naming the time it would take. Each protocol's calibration sleeps
// calibrationCalls service times on one server's workers, then sends as many calls to that
// one server, each held for the median service time: at the highest load's rate at one
// server, or from a closed loop's callers (see calibrate). It does not depend on -calls or
// -replicas, so the points' bound does not hold it: at -loads 0.001 -calls 100 the points
// take 2.5 hours and the calibration took 49.
func checkCalibration(r *runConfig) error {
	n := float64(calibrationCalls(*r))
	mean := r.service.Mean().Seconds() * r.timeScale // on the wire
	secs := math.Ceil(n/float64(r.workers)) * mean   // the sleeps, workers at once
	if r.callers > 0 {
		secs += n * medianOf(r.service).Seconds() * r.timeScale / float64(min(r.callers, r.workers))
	} else {
		secs += n / (slices.Max(r.loads) / 100 * float64(r.workers) / mean)
	}
	if secs *= float64(len(r.protocols)); secs > maxPointPace.Seconds() {
		return usagef("the calibration before the first point (%.0f sleeps and %.0f calls to one server of %d workers, per protocol, at the highest load's rate or from the callers) would take about %.0f hours; the most is %v: raise the highest load or shorten the service time",
			n, n, r.workers, secs/3600, maxPointPace)
	}
	return nil
}

// flagError is a bad value of the flag name: err, the simulator's reason, as a usage error.
func flagError(name string, err error) error { return usagef("-%s: %v", name, err) }

// usesHedgeDelay reports whether any of the named setups hedges after the fixed -hedge-delay:
// those whose trigger changes with it.
func usesHedgeDelay(names []string) bool {
	a, b := sim.Setups(time.Millisecond), sim.Setups(2*time.Millisecond)
	for i := range a {
		if slices.Contains(names, a[i].Name) && a[i].Config.Trigger.String() != b[i].Config.Trigger.String() {
			return true
		}
	}
	return false
}
