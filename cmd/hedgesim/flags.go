package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// config is what the command line asks for, parsed and checked. The model's values (seeds,
// loads, setups, service time) follow the simulator's own grammar (sim.ParseSeeds and the like);
// parsing them runs no simulation, so flag parsing is tested without the engine.
type config struct {
	// policy is what -config and -operation chose (policy.go): a user's policy, run beside
	// the setups. nil without -config.
	policy *policySetup

	calls      int
	seeds      []uint64
	loads      []float64
	setups     []string // canonical setup names, in the order asked
	modes      []string // "ignored", "reaches"
	out        string
	workers    int
	service    sim.ServiceSpec
	hedgeDelay time.Duration
	tablesOnly bool   // print Markdown tables on stdout, write no files
	from       string // re-render this report.json instead of simulating

	family     string // scenario family ("" = reference)
	clients    int
	inflight   int // each client's bound on calls in flight (0 = the family's; unbounded in the reference model)
	replicas   int
	balancers  []string // with replicas: the balancers to run every setup under
	tieDelay   time.Duration
	deadline   time.Duration // every call's deadline after its arrival (0 = the family's, none in the reference model)
	scorecard  bool          // run the safety scorecard instead of a report
	timeline   bool          // write each setup's run second by second instead of a report
	families   []string      // the scorecard's families (nil = every family)
	setupSet   bool          // -setups was given
	workersSet bool          // -workers was given (else the family's, or 16)
	callsSet   bool          // -calls was given
	seedsSet   bool          // -seeds was given
}

// Defaults: the reference run of SIMULATION.md (200,000 calls per point, seeds 1 and 2), so
// that the figures the command prints with no arguments are the ones the README quotes. It takes
// about ten seconds on two cores; a shorter run (-calls) prints how far its figures can be trusted.
const (
	defaultCalls      = 200000
	defaultSeeds      = "1,2"
	defaultLoads      = "30,50,70,85,95"
	defaultOut        = "hedgesim-report"
	defaultWorkers    = 16
	defaultHedgeDelay = 20 * time.Millisecond
	// The scorecard runs 64 runs per family: 100,000 calls each (90,000 measured, so a p99.9
	// rests on the slowest 90) keeps the whole scorecard near a minute on two cores.
	defaultScorecardCalls = 100000
	// The scorecard judges every point on each of three seeds: a rule that holds on one seed
	// by luck rarely holds on three.
	defaultScorecardSeeds = "1,2,3"
	// maxCalls bounds -calls well below the simulator's own sim.MaxCalls: a point keeps 8 bytes
	// for every call and runs beside as many others as there are cores, so 20,000,000 calls
	// (160 MB and about half a minute a point) is a run a machine finishes, where a billion
	// asked for 8 GB a point at once and ended in an out-of-memory crash.
	maxCalls = 20_000_000
)

// usageError is a bad command line: the command prints it and exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

const usageText = `Usage: hedgesim [flags]

hedgesim simulates what request hedging does to the tail when every attempt waits in the same
queue. It runs every setup at every load in both cancellation modes and writes report.md,
report.html and report.json into -out. Same flags and seeds, same report, byte for byte.

Examples:
  hedgesim                                       # the reference run: 200000 calls per point, seeds 1 and 2
  hedgesim -calls 20000 -seeds 1                 # a quick look (it says how far to trust it)
  hedgesim -setups "no hedge;hedge, default budget" -loads 70,95 -cancellation reaches
  hedgesim -service exponential:10ms -workers 8  # an M/M/8 queue
  hedgesim -service empirical:latencies.txt      # your own service times, one per line
  hedgesim -family bursty -setups "no hedge;recommended"   # a scenario family's model
  hedgesim -replicas 4 -workers 4 -balancer all  # 4 replicas with their own queues, every balancer
  hedgesim -scorecard                            # the safety scorecard of recommended
  hedgesim -scorecard -setups "recommended, adaptive limit" -families reference,bursty
  hedgesim -timeline -family fleet-large -setups "no hedge;recommended" -loads 95 -seeds 8 -cancellation ignored
                                                 # each run second by second: when hedges fire, when the gates refuse
  hedgesim -config policy.yaml -operation api.example.com -service empirical:latencies.txt
                                                 # the policy a service loads, beside no hedge

Flags:
`

// parseArgs parses the command line. setupNames are the setups the simulator knows, in their
// reference order. Errors are *usageError, except flag.ErrHelp for -h.
// It is long because it is the flag table: one declaration and one check per flag.
func parseArgs(args []string, setupNames, familyNames []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("hedgesim", flag.ContinueOnError)
	// The flag package would print the whole usage after every mistake; the command prints the
	// error and a hint instead, and the usage only for -h.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nSetups (for -setups, separated by ';'):\n")
		for _, n := range setupNames {
			fmt.Fprintf(stderr, "  %s\n", n)
		}
		fmt.Fprintf(stderr, "\nScenario families (for -family and -families):\n")
		for _, n := range familyNames {
			fmt.Fprintf(stderr, "  %s\n", n)
		}
	}
	calls := fs.Int("calls", defaultCalls, fmt.Sprintf("calls per point (setup × load × cancellation × seed), at most %d; the first 10%% are not measured (-scorecard: default %d)", maxCalls, defaultScorecardCalls))
	seeds := fs.String("seeds", defaultSeeds, "comma-separated seeds, e.g. 1,2 (-scorecard: default 1,2,3)")
	loads := fs.String("loads", defaultLoads, "comma-separated loads in % of worker capacity without hedges, each in (0, 100)")
	setups := fs.String("setups", "all", "setups to run, separated by ';' (names as listed below), or all")
	cancel := fs.String("cancellation", "both", "cancellation mode: ignored, reaches or both")
	policy := addPolicyFlags(fs) // -config, -operation
	out := fs.String("out", defaultOut, "directory to write report.md, report.html and report.json into")
	workers := fs.Int("workers", defaultWorkers, fmt.Sprintf("workers serving the one shared FIFO queue (with -replicas, each replica's; at most %d in all)", sim.MaxWorkers))
	svc := fs.String("service", "mixture", "service time: mixture (the reference model), exponential:MEAN (e.g. exponential:10ms),\nor empirical:FILE (one duration per line, e.g. 12ms or 3.5ms; a bare number is ms; # starts a comment)")
	delay := fs.Duration("hedge-delay", defaultHedgeDelay, "hedge delay of the fixed-delay setups (After)")
	tables := fs.Bool("tables-only", false, "print the Markdown tables of each seed on stdout instead of writing files (for docs)")
	from := fs.String("from", "", "render the report from this report.json instead of simulating (with -out or -tables-only only: it runs no model)")
	family := fs.String("family", "", "scenario family whose model to run (see the list below); default the reference model")
	clients := fs.Int("clients", 0, fmt.Sprintf("independent clients, each with its own policy, each call to one drawn at random, at most %d\n(default 0: the family's, 1 in the reference model)", sim.MaxClients))
	inflight := fs.Int("client-inflight", 0, "each client's calls in flight at most; the rest wait in the client, latency counted\nfrom arrival (1: sequential clients; default 0: the family's, unbounded in the reference model and\nevery family but fleet-sequential, whose clients stay sequential with 0)")
	replicas := fs.Int("replicas", 0, fmt.Sprintf("replicas, each with -workers workers and its own FIFO queue, at most %d\n(default 0: the family's, 1 in the reference model)", sim.MaxReplicas))
	balancer := fs.String("balancer", "", "client-side balancer with replicas (it needs -replicas > 1, or a family with replicas): random,\nround-robin, least-outstanding or p2c (default p2c), or several separated by commas, or all; \"no hedge\" also runs under random and p2c")
	tieDelay := fs.Duration("tie-delay", 0, "how long a cancellation takes to reach the server (cancellation reaches)")
	deadline := fs.Duration("deadline", 0, "every call's deadline after its arrival, e.g. 50ms: a call still running then fails (failed_pct),\nand deadline-aware setups hedge by it (default: the family's; none in the reference model)")
	scorecard := fs.Bool("scorecard", false, "run the safety scorecard: -setups (one setup, default recommended) against no hedge\non every family × load × cancellation mode × seed; writes scorecard.md, scorecard.html and scorecard.json into -out\n(not with -from or -tables-only)")
	families := fs.String("families", "all", "the scorecard's scenario families, comma-separated, or all")
	timeline := fs.Bool("timeline", false, "follow one run of each setup second by second (calls, slow calls, p99, hedges sent and won,\nrefusals by reason): give one -loads, one -seeds and -cancellation ignored or reaches; writes\ntimeline.html, timeline.md and timeline.json into -out")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return config{}, err
		}
		return config{}, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return config{}, usagef("unexpected argument %q (flags only; quote a -setups list that has spaces)", fs.Arg(0))
	}
	cfg := config{
		calls:      *calls,
		out:        *out,
		workers:    *workers,
		hedgeDelay: *delay,
		tablesOnly: *tables,
		from:       *from,
		family:     *family,
		clients:    *clients,
		inflight:   *inflight,
		replicas:   *replicas,
		tieDelay:   *tieDelay,
		deadline:   *deadline,
		scorecard:  *scorecard,
		timeline:   *timeline,
	}
	var modelFlags []string // the flags of a sweep's model that were given
	var runFlags []string   // the flags given that only a run reads (-from runs none)
	balancerSet := false
	fs.Visit(func(f *flag.Flag) {
		balancerSet = balancerSet || f.Name == "balancer"
		switch f.Name {
		case "from", "out", "tables-only", "scorecard", "timeline": // the last two have errors of their own
		default:
			runFlags = append(runFlags, "-"+f.Name)
		}
		switch f.Name {
		case "service", "hedge-delay", "family", "clients", "client-inflight", "replicas", "balancer", "tie-delay":
			modelFlags = append(modelFlags, "-"+f.Name)
		}
		switch f.Name {
		case "setups":
			cfg.setupSet = true
		case "workers":
			cfg.workersSet = true
			modelFlags = append(modelFlags, "-workers")
		case "calls":
			cfg.callsSet = true
		case "seeds":
			cfg.seedsSet = true
		}
	})
	if cfg.from != "" && len(runFlags) > 0 {
		// Refused, not ignored: -from renders the report.json as it was written, so
		// "-from report.json -setups recommended" drew every setup, and "-from report.json
		// -config policy.yaml" no policy, without a word.
		return config{}, usagef("-from renders %s as it was written, running nothing: %s would change nothing (run without -from to simulate with them)",
			cfg.from, strings.Join(runFlags, ", "))
	}
	if cfg.family != "" && !slices.Contains(familyNames, cfg.family) {
		return config{}, usagef("-family: unknown family %q; the families are:\n  %s", cfg.family, strings.Join(familyNames, "\n  "))
	}
	if !strings.EqualFold(strings.TrimSpace(*families), "all") {
		for f := range strings.SplitSeq(*families, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if !slices.Contains(familyNames, f) {
				return config{}, usagef("-families: unknown family %q; the families are:\n  %s", f, strings.Join(familyNames, "\n  "))
			}
			if slices.Contains(cfg.families, f) {
				return config{}, usagef("-families: family %q is listed twice", f)
			}
			cfg.families = append(cfg.families, f)
		}
	}
	if len(cfg.families) > 0 && !cfg.scorecard {
		return config{}, usagef("-families chooses the scorecard's families: it needs -scorecard (-family runs a sweep on one family's model)")
	}
	if cfg.clients < 0 || cfg.clients > sim.MaxClients {
		return config{}, usagef("-clients must be in [1, %d], or 0 for the family's (1 in the reference model), got %d", sim.MaxClients, cfg.clients)
	}
	if cfg.replicas < 0 || cfg.replicas > sim.MaxReplicas {
		return config{}, usagef("-replicas must be in [1, %d], or 0 for the family's (1 in the reference model), got %d", sim.MaxReplicas, cfg.replicas)
	}
	if cfg.tieDelay < 0 {
		return config{}, usagef("-tie-delay must be >= 0, got %v", cfg.tieDelay)
	}
	if cfg.scorecard && (cfg.from != "" || cfg.tablesOnly) {
		return config{}, usagef("-scorecard runs the scorecard and writes its files: not with -from or -tables-only")
	}
	if cfg.deadline < 0 {
		return config{}, usagef("-deadline must be >= 0 (0 = none), got %v", cfg.deadline)
	}
	if cfg.deadline > 0 && cfg.scorecard {
		return config{}, usagef("-deadline does not apply to -scorecard: its family %q runs every call with a deadline", "deadline")
	}
	if cfg.scorecard && len(modelFlags) > 0 {
		return config{}, usagef("%s does not apply to -scorecard: each of its families has a model of its own (-families chooses them)", strings.Join(modelFlags, ", "))
	}
	if cfg.inflight < 0 {
		return config{}, usagef("-client-inflight must be >= 0 (0 = the family's, unbounded in the reference model), got %d", cfg.inflight)
	}
	for b := range strings.SplitSeq(*balancer, ",") {
		switch b = strings.TrimSpace(b); b {
		case "":
		case "all", "random", "round-robin", "least-outstanding", "p2c":
			cfg.balancers = append(cfg.balancers, b)
		default:
			return config{}, usagef("-balancer must be random, round-robin, least-outstanding, p2c (or several, or all), got %q", b)
		}
	}
	var err error
	if cfg.calls <= 0 || cfg.calls > maxCalls {
		return config{}, usagef("-calls must be > 0 and at most %d, got %d", maxCalls, cfg.calls)
	}
	if cfg.workers <= 0 || cfg.workers > sim.MaxWorkers {
		return config{}, usagef("-workers must be > 0 and at most %d, got %d", sim.MaxWorkers, cfg.workers)
	}
	if err := cfg.checkFleet(balancerSet); err != nil {
		return config{}, err
	}
	if cfg.hedgeDelay <= 0 {
		return config{}, usagef("-hedge-delay must be > 0, got %v", cfg.hedgeDelay)
	}
	if cfg.out == "" && !cfg.tablesOnly {
		return config{}, usagef("-out must name a directory")
	}
	if cfg.scorecard && !cfg.seedsSet {
		*seeds = defaultScorecardSeeds
	}
	if cfg.seeds, err = sim.ParseSeeds(*seeds); err != nil {
		return config{}, flagError("seeds", err)
	}
	if cfg.loads, err = sim.ParseLoads(*loads); err != nil {
		return config{}, flagError("loads", err)
	}
	if err := cfg.checkClientSlots(); err != nil {
		return config{}, err
	}
	if cfg.setups, err = sim.ParseSetups(*setups, setupNames); err != nil {
		return config{}, flagError("setups", err)
	}
	if cfg.scorecard {
		if !cfg.callsSet {
			cfg.calls = defaultScorecardCalls
		}
		if !cfg.setupSet {
			cfg.setups = []string{"recommended"}
		}
		if len(cfg.setups) != 1 {
			return config{}, usagef("-scorecard judges one setup against no hedge: give -setups one name")
		}
	}
	if cfg.clients > cfg.calls {
		return config{}, usagef("-clients %d is more than -calls %d: each call goes to a client drawn at random, and many clients would make none", cfg.clients, cfg.calls)
	}
	if cfg.modes, err = parseCancellation(*cancel); err != nil {
		return config{}, err
	}
	if cfg.tieDelay > 0 && !slices.Contains(cfg.modes, "reaches") {
		// Refused, not ignored: with cancellation ignored no cancel is sent, so the delay
		// would change nothing and the report would read as though it had been modelled.
		return config{}, usagef("-tie-delay is how long a cancellation takes to reach the server: it needs -cancellation reaches or both, got %q", *cancel)
	}
	if cfg.timeline {
		switch {
		case cfg.scorecard || cfg.tablesOnly || cfg.from != "":
			return config{}, usagef("-timeline runs on its own: not with -scorecard, -tables-only or -from")
		case len(cfg.loads) != 1 || len(cfg.seeds) != 1 || len(cfg.modes) != 1:
			return config{}, usagef("-timeline follows one run of each setup: give one -loads, one -seeds and -cancellation ignored or reaches")
		}
	}
	if cfg.service, err = sim.ParseService(*svc); err != nil {
		return config{}, usagef("-service %v", err)
	}
	if err := policy.apply(fs, &cfg); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// familyParams is the model of -family, the zero Params without one (or for a name that is
// no family's, which parseArgs has refused by then).
func (c config) familyParams() sim.Params {
	if c.family == "" {
		return sim.Params{}
	}
	f, err := sim.FamilyByName(c.family)
	if err != nil {
		return sim.Params{}
	}
	return f.Params
}

// checkFleet checks what -replicas, -workers and -balancer make together, with the family's
// own replicas and workers where those flags leave them: the simulator refuses more than
// sim.MaxWorkers workers in all only once the run has started, and there it blames
// Replicas, though each flag may be in range on its own. A -balancer without replicas
// would choose nothing, so it is refused rather than ignored. A -scorecard's families have
// their own models (checked before this), and -from runs no model.
func (c config) checkFleet(balancerSet bool) error {
	if c.scorecard || c.from != "" {
		return nil
	}
	fam := c.familyParams()
	replicas, fromFamily := c.replicas, false
	if replicas == 0 {
		replicas, fromFamily = max(fam.Replicas, 1), fam.Replicas > 1
	}
	workers, famWorkers := c.workers, false
	if c.family != "" && !c.workersSet && fam.Workers > 0 {
		workers, famWorkers = fam.Workers, true
	}
	if replicas*workers > sim.MaxWorkers {
		rs, ws := fmt.Sprintf("-replicas %d", replicas), fmt.Sprintf("-workers %d", workers)
		if fromFamily {
			rs = fmt.Sprintf("the family's %d replicas", replicas)
		}
		if famWorkers {
			ws = fmt.Sprintf("the family's %d workers", workers)
		}
		return usagef("-replicas × -workers must be at most %d workers in all, got %s × %s = %d",
			sim.MaxWorkers, rs, ws, replicas*workers)
	}
	if balancerSet && replicas <= 1 {
		return usagef("-balancer needs -replicas > 1 (or a family with replicas): with one server there is nothing to choose")
	}
	return nil
}

// checkClientSlots refuses a -client-inflight bound the clients cannot carry the load with:
// a load of L % keeps L % of the workers in service on average, and each of those calls holds
// one of its client's slots for at least its service time, so with clients × bound slots at
// or below that every setup's clients fall behind without end, and the report read "collapse"
// for no hedge too, as though hedges had multiplied the load.
func (c config) checkClientSlots() error {
	if c.scorecard || c.from != "" {
		return nil
	}
	fam := c.familyParams()
	inflight := c.inflight
	if inflight == 0 {
		inflight = fam.ClientInFlight
	}
	if inflight == 0 {
		return nil
	}
	clients := c.clients
	if clients == 0 {
		clients = max(fam.Clients, 1)
	}
	replicas := c.replicas
	if replicas == 0 {
		replicas = max(fam.Replicas, 1)
	}
	workers := c.workers
	if c.family != "" && !c.workersSet && fam.Workers > 0 {
		workers = fam.Workers
	}
	slots := float64(clients) * float64(inflight)
	top := slices.Max(c.loads)
	if busy := top / 100 * float64(replicas*workers); slots <= busy {
		return usagef("%d clients × %d calls in flight each = %g calls at most, but %g %% load keeps %g calls in service on average (%d workers in all): "+
			"every setup, no hedge too, would fall behind in the clients' own queues; raise -clients or -client-inflight, or lower -loads",
			clients, inflight, slots, top, busy, replicas*workers)
	}
	return nil
}

// flagError is a bad value of the flag name: err, the simulator's reason, as a usage error.
func flagError(name string, err error) error { return usagef("-%s: %v", name, err) }

func parseCancellation(s string) ([]string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ignored":
		return []string{"ignored"}, nil
	case "reaches":
		return []string{"reaches"}, nil
	case "both":
		return []string{"ignored", "reaches"}, nil
	}
	return nil, usagef("-cancellation must be ignored, reaches or both, got %q", s)
}
