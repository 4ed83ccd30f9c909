package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
)

// Cancellation modes (Point.Cancellation).
const (
	// Ignored: the client stops waiting for a loser, but the server finishes it (HTTP/1.1):
	// the loser keeps its queue slot and its worker until done; its answer is discarded.
	Ignored = "ignored"
	// Reaches: cancellation reaches the server (gRPC): a queued loser leaves the queue and one
	// in service frees its worker at the moment it is cancelled.
	Reaches = "reaches"
)

// MaxWorkers bounds Params.Workers, and the workers of every replica together: every worker is
// a few bytes of state, but a run must not be able to ask for unbounded memory. It is exported,
// with MaxClients and MaxReplicas, so that a command can refuse a value as its own usage error.
const MaxWorkers = 1 << 20

// MaxClients bounds Params.Clients: each client holds a policy of its own, about 30 KB once it
// has made calls (its latency window most of it), so that 16,384 clients take about half a
// gigabyte a point, and twice that at the garbage collector's peak. At 65,536 a run on two
// cores took 13 GB.
const MaxClients = 1 << 14

// clientsAtOnce bounds the clients of the points that a default parallelism runs at once:
// on a machine of many cores, points of many clients each run fewer at a time.
const clientsAtOnce = 1 << 15

// parallelism is how many points run at once: asked when above 0, else GOMAXPROCS, but no
// more points than hold clientsAtOnce clients together (at least one).
func parallelism(asked, clients int) int {
	if asked > 0 {
		return asked
	}
	return max(1, min(runtime.GOMAXPROCS(0), clientsAtOnce/max(clients, 1)))
}

// MaxReplicas bounds Params.Replicas.
const MaxReplicas = 64

// MaxCalls is the most calls a run takes: each measured call keeps its latency, and a billion
// of them is 8 GB.
const MaxCalls = 1_000_000_000

// Params is the queueing model one point runs in. A zero field means the documented default.
type Params struct {
	// Workers serving the one shared FIFO queue. 0 = 16; at most 1<<20.
	Workers int
	// Service is the service-time distribution. nil = ReferenceMixture().
	Service Distribution
	// Calls is how many calls arrive; the first WarmupFraction of them are not measured. At
	// most MaxCalls.
	// 0 = 200,000.
	Calls int
	// WarmupFraction of the calls (by arrival) are not measured. 0 = 0.1; must be in [0, 1).
	WarmupFraction float64
	// MaxQueue bounds the requests queued at every replica together (and, apart, the calls
	// waiting in their clients): a run whose queue grows past it has collapsed and stops at
	// once. 0 = 2000 × Workers × Replicas (2000 per worker).
	MaxQueue int
	// MaxEvents bounds the work of one run; a run that reaches it is reported as a collapse.
	// 0 = 100 × Calls + 1,000,000.
	MaxEvents int64

	// Clients is how many independent clients make the calls, each with its own *hedge.Policy
	// built from the setup (and its own view of the replicas); each call belongs to one client,
	// at random, so each sees a Poisson share of the arrivals. 0 = 1; at most MaxClients, and
	// at most Calls (a client beyond would make no call).
	Clients int
	// ClientInFlight bounds each client's calls in flight: a call that arrives while its
	// client has that many waits in the client (first come, first served) until one ends, and
	// its latency counts from its arrival. 1 is a sequential client (a CLI, a batch job, a
	// request-per-goroutine worker); 0 = unbounded.
	ClientInFlight int
	// HeavyClientShare, with two or more Clients, is the share of the calls the first client
	// makes; the others split the rest evenly (one heavy client among many light ones).
	// 0 = an even split; otherwise in (0, 1).
	HeavyClientShare float64
	// Replicas is how many servers there are, each with Workers workers and its own FIFO queue,
	// behind a client-side Balancer; an attempt goes to a replica its call has not used while
	// one is left. 0 = 1, the reference model; at most 64.
	Replicas int
	// Balancer chooses the replica of each attempt: "random", "round-robin",
	// "least-outstanding" or "p2c" (power of two choices on outstanding attempts). "" = p2c.
	Balancer string
	// TieDelay is how long a cancellation takes to reach the server when cancellation reaches
	// it (the network between them): until then the cancelled request stays queued or in
	// service. 0 = at once.
	TieDelay time.Duration
	// Arrivals shapes the arrival rate over time (bursts, a load step). Zero = constant.
	Arrivals Arrivals
	// Slowdowns multiply service times for a while (a brownout, a degraded replica).
	Slowdowns []Slowdown
	// Pauses are periodic stop-the-world pauses of the replicas. Zero = none.
	Pauses Pauses
	// Failures make replicas refuse connections or swallow requests for a while.
	Failures []Failure
	// Timeout is the callers' deadline: a call still running Timeout after it arrived is
	// cancelled and fails (its attempts count as failures for the replicas' health). Each
	// call's state machine is told it (hedge.CallOptions.Deadline), as Do is by a context's
	// deadline, so a setup with Adaptive.UseDeadline hedges by it. 0 = none.
	Timeout time.Duration
	// ClientDelay makes the clients late to their own events now and then (CPU contention on
	// the callers). Zero = never.
	ClientDelay ClientDelay
}

func (p Params) resolve() (Params, error) {
	if p.Workers == 0 {
		p.Workers = 16
	}
	if p.Service == nil {
		p.Service = ReferenceMixture()
	}
	if p.Calls == 0 {
		p.Calls = 200_000
	}
	if p.WarmupFraction == 0 {
		p.WarmupFraction = 0.1
	}
	if p.Clients == 0 {
		p.Clients = 1
	}
	if p.Replicas == 0 {
		p.Replicas = 1
	}
	if p.Balancer == "" {
		p.Balancer = BalancerP2C
	}
	if p.MaxQueue == 0 {
		p.MaxQueue = 2000 * p.Workers * max(p.Replicas, 1)
	}
	if p.MaxEvents == 0 {
		p.MaxEvents = 100*int64(p.Calls) + 1_000_000
	}
	switch {
	case p.Workers < 0 || p.Workers > MaxWorkers:
		return p, fmt.Errorf("sim: Workers must be in [1, %d] (0 = 16), got %d", MaxWorkers, p.Workers)
	case p.Calls < 0:
		return p, fmt.Errorf("sim: Calls must be >= 1 (0 = 200000), got %d", p.Calls)
	case p.Calls > MaxCalls:
		return p, fmt.Errorf("sim: Calls must be at most %d, got %d", MaxCalls, p.Calls)
	case !(p.WarmupFraction >= 0 && p.WarmupFraction < 1):
		return p, fmt.Errorf("sim: WarmupFraction must be in [0, 1), got %v", p.WarmupFraction)
	case p.MaxQueue < 0:
		return p, fmt.Errorf("sim: MaxQueue must be >= 1 (0 = 2000 × Workers × Replicas), got %d", p.MaxQueue)
	case p.MaxEvents < 0:
		return p, fmt.Errorf("sim: MaxEvents must be >= 1 (0 = 100 × Calls + 1e6), got %d", p.MaxEvents)
	case p.Clients < 0 || p.Clients > MaxClients:
		return p, fmt.Errorf("sim: Clients must be in [1, %d] (0 = 1), got %d", MaxClients, p.Clients)
	case p.Clients > p.Calls:
		return p, fmt.Errorf("sim: Clients must be at most Calls (each call goes to a client drawn at random, and with more clients than calls many make none), got %d clients for %d calls", p.Clients, p.Calls)
	case p.ClientInFlight < 0:
		return p, fmt.Errorf("sim: ClientInFlight must be >= 0 (0 = unbounded), got %d", p.ClientInFlight)
	case !(p.HeavyClientShare >= 0 && p.HeavyClientShare < 1):
		return p, fmt.Errorf("sim: HeavyClientShare must be in [0, 1) (0 = an even split), got %v", p.HeavyClientShare)
	case p.Replicas < 0 || p.Replicas > MaxReplicas || p.Replicas*p.Workers > MaxWorkers:
		return p, fmt.Errorf("sim: Replicas must be in [1, %d] (0 = 1) with at most %d workers in all, got %d", MaxReplicas, MaxWorkers, p.Replicas)
	case p.TieDelay < 0:
		return p, fmt.Errorf("sim: TieDelay must be >= 0, got %v", p.TieDelay)
	case p.Pauses.Every < 0 || p.Pauses.Length < 0 || p.Pauses.Replicas < 0 || (p.Pauses.Every > 0 && p.Pauses.Length >= p.Pauses.Every):
		return p, fmt.Errorf("sim: Pauses need 0 <= Length < Every, got %+v", p.Pauses)
	}
	if err := checkBalancer(p.Balancer); err != nil {
		return p, err
	}
	if err := p.Arrivals.check(); err != nil {
		return p, err
	}
	if p.Timeout < 0 {
		return p, fmt.Errorf("sim: Timeout must be >= 0, got %v", p.Timeout)
	}
	if err := p.ClientDelay.check(); err != nil {
		return p, err
	}
	for _, f := range p.Failures {
		if err := f.check(p.Replicas); err != nil {
			return p, err
		}
	}
	for _, d := range p.Slowdowns {
		if d.Replica < -1 || d.Replica >= p.Replicas || !(d.Factor > 0) || math.IsInf(d.Factor, 0) || !finite(d.From) || !finite(d.To) || d.From < 0 || (d.To != 0 && d.To < d.From) {
			return p, fmt.Errorf("sim: Slowdown needs Replica in [-1, Replicas), Factor > 0 and finite 0 <= From <= To (To 0 = until the end), got %+v", d)
		}
	}
	if err := validateDistribution(p.Service); err != nil {
		return p, err
	}
	return p, nil
}

// finite reports whether x is neither NaN nor infinite: a fraction of the run's span that is
// NaN compared false with every bound and was accepted, and an infinite one converted to the
// most negative time (a Slowdown From +Inf applied from the start, one To +Inf never).
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkPoint(loadPct float64, mode string) error {
	if !(loadPct > 0) || math.IsInf(loadPct, 0) {
		return fmt.Errorf("sim: load must be > 0 %%, got %v", loadPct)
	}
	if mode != Ignored && mode != Reaches {
		return fmt.Errorf("sim: cancellation must be %q or %q, got %q", Ignored, Reaches, mode)
	}
	return nil
}

// runner runs points one after another, reusing its engine and client buffers: one per
// sweep goroutine.
type runner struct {
	s   *sim
	hc  hedgeClient
	pol []*hedge.Policy

	wrap func(*hedgeClient) client // in tests: the engine's client, wrapped round hc
}

func newRunner() *runner { return &runner{s: newSim()} }

// client is the engine's client: hc, or in tests what wrap makes of it.
func (r *runner) client() client {
	if r.wrap != nil {
		return r.wrap(&r.hc)
	}
	return &r.hc
}

// Run simulates one point: setup's policy (one *hedge.Policy shared by every call) against
// the model in p, at loadPct percent of the load that keeps the workers busy without hedging
// (λ = load · Workers · Replicas / E[service time], less the capacity that slow or pausing
// replicas lose), with the given cancellation mode (Ignored or
// Reaches) and seed. The same arguments give the same Point.
//
// What the figures mean:
//   - the percentiles (P50Ms, P99Ms, P999Ms) are exact order statistics (nearest rank) of every
//     measured call, a failed call (rejected by the limit, refused by an open breaker, every
//     attempt failed) counting as slower than any success: a percentile that lands on a failed
//     call is [Failed]. FailedPct counts every failed call, RejectedPct those refused before
//     reaching the server. MeanMs is the mean of every measured call, Failed when any failed
//     (a mean of the successes alone would read lower the more calls failed). The percentiles
//     and MeanMs are 0 when Collapse is set.
//   - RequestsPerCall is the attempts that reached the server per measured call. An attempt
//     reached the server when a worker started it or, in "ignored" mode, when it was queued
//     (the server will serve it whatever the client does). In "reaches" mode an attempt
//     cancelled while still queued did not reach the server.
//   - WastedWorkPct is the server time spent on attempts whose answer was discarded (all of
//     a discarded attempt's service time in "ignored" mode; the time it had been served when
//     cancelled in "reaches" mode), as a share of the server time of all measured attempts.
//   - UtilisationPct is busy worker time / (Workers × Replicas × elapsed time) over the measurement
//     window: from the arrival of the first measured call to the end of the last one.
//   - HedgeRate and HedgeWinRate come from the policy's HedgeStarted and HedgeWon events for
//     measured calls, Suppressed from its HedgeSuppressed events, by reason.
func Run(p Params, setup Setup, loadPct float64, mode string, seed uint64) (Point, error) {
	p, err := p.resolve()
	if err != nil {
		return Point{}, invalid(err)
	}
	if err := checkPoint(loadPct, mode); err != nil {
		return Point{}, invalid(err)
	}
	return newRunner().run(context.Background(), p, setup, loadPct, mode, seed)
}

func (r *runner) run(ctx context.Context, p Params, setup Setup, loadPct float64, mode string, seed uint64) (Point, error) {
	cfg := setup.Config
	user := cfg.Observer
	cfg.Observer = r.hc.observe
	r.pol = r.pol[:0]
	for range p.Clients {
		pol, err := hedge.New(cfg)
		if err != nil {
			return Point{}, invalid(fmt.Errorf("sim: setup %q: %w", setup.Name, err))
		}
		r.pol = append(r.pol, pol)
	}
	lambda := loadPct / 100 * (float64(p.Workers) * p.capacity()) / p.Service.Mean().Seconds()
	if span := float64(p.Calls) / lambda * 1e9; span > 1<<60 {
		return Point{}, invalid(fmt.Errorf("sim: load %v%% is too low: %d calls would take %.3g years of virtual time", loadPct, p.Calls, span/3.15e16))
	}
	warm := int(p.WarmupFraction * float64(p.Calls))
	span := float64(p.Calls) / lambda * 1e9
	var choose []chooser
	if p.Replicas > 1 {
		for c := range p.Clients {
			rs, err := newReplicaSet(p.Balancer, p.Replicas, mix(streamKey(seed, streamChoose)+uint64(c)))
			if err != nil {
				return Point{}, invalid(fmt.Errorf("sim: %w", err))
			}
			choose = append(choose, rs)
		}
	}
	pauses := p.Pauses.Replicas
	if pauses == 0 {
		pauses = p.Replicas
	}
	r.s.reset(runParams{
		replicas:       p.Replicas,
		clients:        p.Clients,
		clientInFlight: p.ClientInFlight,
		heavyShare:     p.HeavyClientShare,
		choose:         choose,
		tieDelay:       int64(p.TieDelay),
		arrMult:        p.Arrivals.multiplier(span),
		svcMult:        serviceMultiplier(p.Slowdowns, span),
		pauseEvery:     int64(p.Pauses.Every),
		pauseLen:       int64(p.Pauses.Length),
		pauses:         pauses,
		failures:       compileFailures(p.Failures, span),
		timeout:        int64(p.Timeout),
		busy:           p.ClientDelay,
		workers:        p.Workers,
		dist:           p.Service,
		calls:          p.Calls,
		warm:           warm,
		reaches:        mode == Reaches,
		maxQueue:       p.MaxQueue,
		maxEvents:      p.MaxEvents,
		lambda:         lambda,
		seed:           seed,
		reports:        setup.ServerLoad,
		reportEvery:    int64(setup.LoadInterval),
	}, r.client())
	r.hc.reset(r.pol, r.s, user)
	var stop func() bool
	if ctx.Done() != nil {
		stop = func() bool { return ctx.Err() != nil }
	}
	r.s.run(stop)
	if err := ctx.Err(); err != nil {
		return Point{}, err
	}
	if r.s.stalled {
		r.hc.p = nil
		clear(r.pol)
		return Point{}, invalid(fmt.Errorf("sim: Arrivals %+v: the arrival rate changes more than a million times between two calls (%v apart on average): BurstEvery is far too short", p.Arrivals, time.Duration(1e9/lambda)))
	}
	pt := Point{Setup: setup.Name, LoadPct: loadPct, Cancellation: mode, Seed: seed,
		Replicas: p.Replicas, Balancer: p.balancerName(), Clients: p.Clients, ClientInFlight: p.ClientInFlight}
	r.s.measure(&pt)
	pt.Suppressed = r.hc.suppressed()
	r.hc.p = nil
	clear(r.pol)
	return pt, nil
}

// capacity is how many replicas' worth of work the servers can do at the end of the run: a
// replica slowed down until the end counts for 1/Factor of one, a pausing or flapping one for
// the share of the time it serves. The load of a point is a share of this capacity, so that a slow or
// pausing replica does not overload the model at every load (a brownout, which ends, does not
// count). It is exactly Replicas when nothing is slowed or paused.
func (p Params) capacity() float64 {
	var c float64
	pauses := p.Pauses.Replicas
	if pauses == 0 {
		pauses = p.Replicas
	}
	for r := range p.Replicas {
		share := 1.0
		for _, d := range p.Slowdowns {
			if d.To == 0 && (d.Replica < 0 || d.Replica == r) {
				share /= d.Factor
			}
		}
		if p.Pauses.Every > 0 && r < pauses {
			share *= 1 - float64(p.Pauses.Length)/float64(p.Pauses.Every)
		}
		for _, f := range p.Failures {
			if f.Replica == r && f.For == 0 {
				if f.FlapEvery > 0 {
					share *= 1 - float64(f.FlapFor)/float64(f.FlapEvery)
				} else {
					share = 0
				}
			}
		}
		c += share
	}
	return c
}

// balancerName is the Balancer of a model with replicas, "" for one replica (there is nothing to
// balance).
func (p Params) balancerName() string {
	if p.Replicas <= 1 {
		return ""
	}
	return p.Balancer
}

// SweepConfig says which points a Sweep runs and in what model. A zero field means the
// documented default (the reference model of SIMULATION.md).
type SweepConfig struct {
	// Workers serving the shared queue. 0 = 16.
	Workers int
	// Service is the service-time distribution. nil = ReferenceMixture().
	Service Distribution
	// HedgeDelay is the fixed hedge delay of the After setups. 0 = 20ms.
	HedgeDelay time.Duration
	// Calls per point. 0 = 200,000.
	Calls int
	// WarmupFraction of each point's calls (by arrival) are not measured. 0 = 0.1.
	WarmupFraction float64
	// Seeds, one point per seed, each listed once. nil = {1, 2}.
	Seeds []uint64
	// Loads in percent of the no-hedge load that keeps the workers busy, each listed once.
	// nil = {30, 50, 70, 85, 95}.
	Loads []float64
	// Setups by name (see Setups); "all" = every setup. nil = every setup, or none when Extra
	// is set.
	Setups []string
	// Extra setups run after the named ones: a user's own configurations. Their names must be
	// new. Points run in parallel, so an Observer in an extra setup's Config is called from
	// several goroutines at once.
	Extra []Setup
	// Modes: Ignored, Reaches, or "both". nil = both.
	Modes []string
	// Parallelism is how many points run at once. 0 = runtime.GOMAXPROCS(0), or fewer when
	// the points have thousands of clients each (at most 32,768 clients at once).
	Parallelism int

	// Family is the scenario family whose model the sweep runs (see Families); "" = the
	// reference model. The fields below, and Workers and Service, override the family's.
	Family string
	// Clients, ClientInFlight, Replicas, Balancer, TieDelay: see Params.
	Clients        int
	ClientInFlight int
	Replicas       int
	Balancer       string
	TieDelay       time.Duration
	// Timeout is every call's deadline after its arrival (see Params); 0 = the family's
	// (none in the reference model).
	Timeout time.Duration
	// Balancers, with Replicas > 1: run every setup under each of these balancers ("all" =
	// every balancer). nil = {Balancer}. Whatever it says, a sweep with replicas also runs "no
	// hedge" under random and under p2c: the baselines a hedging setup must beat.
	Balancers []string
}

// plan is a validated SweepConfig.
type plan struct {
	params Params
	setups []Setup
	runs   []setupRun // setups × balancers, in report order
	loads  []float64
	modes  []string
	seeds  []uint64
	model  Model
}

func (c SweepConfig) plan() (plan, error) {
	var pl plan
	fam := Family{Name: FamilyReference}
	if c.Family != "" {
		f, err := FamilyByName(c.Family)
		if err != nil {
			return pl, err
		}
		fam = f
	}
	params, err := Params{
		Workers: c.Workers, Service: c.Service, Calls: c.Calls, WarmupFraction: c.WarmupFraction,
		Clients: c.Clients, ClientInFlight: c.ClientInFlight, Replicas: c.Replicas, Balancer: c.Balancer, TieDelay: c.TieDelay,
		Timeout: c.Timeout,
	}.withModel(fam.Params).resolve()
	if err != nil {
		return pl, err
	}
	if c.HedgeDelay < 0 {
		return pl, fmt.Errorf("sim: HedgeDelay must be >= 0 (0 = 20ms), got %v", c.HedgeDelay)
	}
	delay := c.HedgeDelay
	if delay == 0 {
		delay = 20 * time.Millisecond
	}
	pl.params = params
	if pl.setups, err = c.planSetups(delay); err != nil {
		return pl, err
	}
	pl.loads = c.Loads
	if len(pl.loads) == 0 {
		pl.loads = []float64{30, 50, 70, 85, 95}
	}
	for _, l := range pl.loads {
		if err := checkPoint(l, Ignored); err != nil {
			return pl, err
		}
	}
	if err := checkOnce("load", pl.loads); err != nil {
		return pl, err
	}
	if pl.modes, err = planModes(c.Modes); err != nil {
		return pl, err
	}
	pl.seeds = c.Seeds
	if len(pl.seeds) == 0 {
		pl.seeds = []uint64{1, 2}
	}
	if err := checkOnce("seed", pl.seeds); err != nil {
		return pl, err
	}
	if pl.runs, err = c.planRuns(params, pl.setups, delay); err != nil {
		return pl, err
	}
	pl.model = pl.sweepModel(fam, delay)
	return pl, nil
}

// planSetups is the sweep's setups: the named ones (every one for none or "all", none when
// only extras were asked for), then the extras, each checked by hedge.New.
func (c SweepConfig) planSetups(delay time.Duration) ([]Setup, error) {
	var setups []Setup
	all := Setups(delay)
	names := c.Setups
	if len(names) == 0 || slices.Contains(names, SetupAll) {
		setups = all
		if len(names) == 0 && len(c.Extra) > 0 {
			setups = nil // only the extra setups were asked for
		}
	} else {
		for _, n := range names {
			i := slices.IndexFunc(all, func(s Setup) bool { return s.Name == n })
			if i < 0 {
				known := make([]string, len(all))
				for j, s := range all {
					known[j] = s.Name
				}
				return nil, fmt.Errorf("sim: unknown setup %q (known: %s, or %q)", n, strings.Join(known, "; "), SetupAll)
			}
			if !slices.ContainsFunc(setups, func(s Setup) bool { return s.Name == n }) {
				setups = append(setups, all[i])
			}
		}
	}
	for _, s := range c.Extra {
		if s.Name == "" || slices.ContainsFunc(setups, func(t Setup) bool { return t.Name == s.Name }) {
			return nil, fmt.Errorf("sim: extra setup name %q is empty or already used", s.Name)
		}
		setups = append(setups, s)
	}
	for _, s := range setups {
		if _, err := hedge.New(s.Config); err != nil {
			return nil, fmt.Errorf("sim: setup %q: %w", s.Name, err)
		}
	}
	return setups, nil
}

// planModes is the sweep's cancellation modes, "both" spelled out, each once; none = both.
func planModes(asked []string) ([]string, error) {
	var modes []string
	for _, m := range asked {
		switch m {
		case "both":
			modes = append(modes, Ignored, Reaches)
		case Ignored, Reaches:
			modes = append(modes, m)
		default:
			return nil, fmt.Errorf("sim: cancellation must be %q, %q or \"both\", got %q", Ignored, Reaches, m)
		}
	}
	if len(modes) == 0 {
		modes = []string{Ignored, Reaches}
	}
	return dedup(modes), nil
}

// planRuns is every setup under each balancer, in report order. With replicas, the "no
// hedge" baselines under random and p2c come first, whether or not they were asked for.
func (c SweepConfig) planRuns(params Params, setups []Setup, delay time.Duration) ([]setupRun, error) {
	var runs []setupRun
	if params.Replicas <= 1 {
		for _, s := range setups {
			runs = append(runs, setupRun{s, params.Balancer})
		}
		return runs, nil
	}
	bals := c.Balancers
	if len(bals) == 0 {
		bals = []string{params.Balancer}
	}
	if slices.Contains(bals, "all") {
		bals = Balancers
	}
	for _, b := range bals {
		if err := checkBalancer(b); err != nil {
			return nil, err
		}
	}
	bals = dedup(bals)
	var nh Setup
	for _, s := range Setups(delay) {
		if s.Name == SetupNoHedge {
			nh = s
		}
	}
	has := func(name, b string) bool {
		return slices.Contains(bals, b) && slices.ContainsFunc(setups, func(s Setup) bool { return s.Name == name })
	}
	for _, b := range []string{BalancerRandom, BalancerP2C} { // the baselines, first
		if !has(SetupNoHedge, b) {
			runs = append(runs, setupRun{nh, b})
		}
	}
	for _, s := range setups {
		for _, b := range bals {
			runs = append(runs, setupRun{s, b})
		}
	}
	return runs, nil
}

// sweepModel is the planned sweep's report.json "model".
func (pl plan) sweepModel(fam Family, delay time.Duration) Model {
	params := pl.params
	names := make([]string, len(pl.setups))
	for i, s := range pl.setups {
		names[i] = s.Name
	}
	return Model{
		Workers:          params.Workers,
		ServiceTime:      params.Service.String(),
		MeanServiceMs:    float64(params.Service.Mean()) / 1e6,
		HedgeDelayMs:     float64(delay) / 1e6,
		Calls:            params.Calls,
		WarmupFraction:   params.WarmupFraction,
		Seeds:            slices.Clone(pl.seeds),
		LoadsPct:         slices.Clone(pl.loads),
		Setups:           names,
		Cancellations:    slices.Clone(pl.modes),
		Family:           fam.Name,
		Replicas:         params.Replicas,
		Balancer:         params.balancerName(),
		Clients:          params.Clients,
		ClientInFlight:   params.ClientInFlight,
		HeavyClientShare: params.HeavyClientShare,
		TieDelayMs:       float64(params.TieDelay) / 1e6,
		DeadlineMs:       float64(params.Timeout) / 1e6,
	}
}

// setupRun is a setup under a balancer.
type setupRun struct {
	setup    Setup
	balancer string
}

// checkOnce returns an error naming a value that list (of seeds, loads or families: what)
// holds twice, and nil when each is there once. Such a value would run its points twice and
// count them twice in a report's and a scorecard's totals, as if it were two seeds or two
// loads; ParseSeeds and ParseLoads refuse it in the commands' flags for the same reason. The
// names of setups, modes and balancers are merged instead (dedup): "all" and "both" overlap
// with the names they stand for.
func checkOnce[T comparable](what string, list []T) error {
	for i, v := range list {
		if slices.Contains(list[:i], v) {
			if s, ok := any(v).(string); ok {
				return fmt.Errorf("sim: %s %q is listed twice", what, s)
			}
			return fmt.Errorf("sim: %s %v is listed twice", what, v)
		}
	}
	return nil
}

func dedup(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Sweep runs every point of cfg — setups × loads × cancellation modes × seeds — on
// Parallelism goroutines and returns them in that order (setup, then load, then mode, then
// seed), so the same configuration gives the same Report, byte for byte once encoded.
// progress, when not nil, is called from the calling goroutine after each point with the
// number of points done and the total. Sweep stops early with ctx's error when ctx is done.
// It returns an error, before running anything, for an invalid cfg, including one that lists
// a seed or a load twice.
func Sweep(ctx context.Context, cfg SweepConfig, progress func(done, total int)) (Report, error) {
	pl, err := cfg.plan()
	if err != nil {
		return Report{}, invalid(err)
	}
	type job struct {
		setupRun
		load float64
		mode string
		seed uint64
	}
	var jobs []job
	for _, s := range pl.runs {
		for _, l := range pl.loads {
			for _, m := range pl.modes {
				for _, sd := range pl.seeds {
					jobs = append(jobs, job{s, l, m, sd})
				}
			}
		}
	}
	par := parallelism(cfg.Parallelism, pl.params.Clients)
	points, err := runAll(ctx, par, len(jobs), func(ctx context.Context, r *runner, i int) (Point, error) {
		j := jobs[i]
		p := pl.params
		p.Balancer = j.balancer
		return r.run(ctx, p, j.setup, j.load, j.mode, j.seed)
	}, progress)
	if errors.Is(err, errStopped) {
		return Report{}, errors.New("sim: sweep stopped before every point ran")
	}
	if err != nil {
		return Report{}, err
	}
	return Report{Model: pl.model, Points: points}, nil
}

// errStopped says runAll ended before every run finished, with no error of its own to give.
var errStopped = errors.New("sim: stopped before every run finished")

// runContained is run(ctx, r, i), with a panic in it (a setup's Observer, say) recovered and
// returned as a *PanicError: it ends the sweep, not the process.
func runContained(ctx context.Context, r *runner, i int, run func(ctx context.Context, r *runner, i int) (Point, error)) (pt Point, panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			pt, panicked, err = Point{}, true, &PanicError{Run: i, Value: v, Stack: debug.Stack()}
		}
	}()
	pt, err = run(ctx, r, i)
	return pt, false, err
}

// runAll runs n simulations on par goroutines, each reusing a runner of its own; run returns
// the i-th. The first error stops the others. progress, when not nil, is called on the
// calling goroutine after each run with how many are done. It returns every run's Point, or
// the first error that is not a cancellation, else ctx's error, else errStopped when a run
// did not finish.
func runAll(ctx context.Context, par, n int, run func(ctx context.Context, r *runner, i int) (Point, error), progress func(done, total int)) ([]Point, error) {
	par = max(1, min(par, n))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	points := make([]Point, n)
	errs := make([]error, n)
	var next atomic.Int64
	done := make(chan int, n)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			r := newRunner()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				var panicked bool
				points[i], panicked, errs[i] = runContained(ctx, r, i, run)
				if panicked {
					r = newRunner() // the run stopped halfway: start the next afresh
				}
				if errs[i] != nil {
					cancel()
				}
				done <- i
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	finished := 0
	for range done {
		finished++
		if progress != nil {
			progress(finished, n)
		}
	}
	for _, e := range errs {
		// A panic is reported whatever it wraps: one whose value wraps a context error is a
		// bug in the run, not the run stopping.
		if _, panicked := errors.AsType[*PanicError](e); panicked || e != nil && !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
			return nil, e
		}
	}
	if finished < n || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		if err := parent.Err(); err != nil {
			return nil, err
		}
		return nil, errStopped
	}
	return points, nil
}
