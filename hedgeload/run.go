package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// runConfig is a whole run: every setup × load × cancellation × protocol × seed, real and
// simulated. Durations are in the model's time unless they say wire.
type runConfig struct {
	calls      int
	warmup     float64
	seeds      []uint64
	loads      []float64
	setups     []string
	modes      []string
	protocols  []string
	workers    int
	replicas   int
	clients    int              // independent clients (0 = 1), each call made by one at random
	balancer   string           // sim's balancer name, with replicas > 1
	service    sim.Distribution // model time
	hedgeDelay time.Duration
	timeScale  float64
	// serverScale multiplies every service time the real servers draw (-server-scale); 0
	// means 1. The simulator is not told: a diagnostic that the comparison can fail.
	serverScale float64
	parallel    int
	band        float64       // agreement band, %
	maxLag      time.Duration // wire
	callers     int           // > 0: callers in a closed loop (loads are then measured, not offered)
	calibrateN  int           // calls and sleeps of the calibration; 0 = 2000
	simSeeds    int           // simulated seeds per point; 0 = 10
}

// Model is the parameters of the run, as report.json's "model": hedgesim's model (the one
// report vocabulary both tools write, its keys flat beside these) and what only a real run has.
type Model struct {
	sim.Model          // Clients: independent clients, each with policies of its own
	Protocols []string `json:"protocols"`
	TimeScale float64  `json:"time_scale"` // wire time = model time × time_scale
	// ServerScale is -server-scale: the real servers drew every service time this many times
	// longer than the model's (1: the model; the simulator is never told).
	ServerScale float64 `json:"server_scale"`
	BandPct     float64 `json:"band_pct"`
	MaxLagMs    float64 `json:"max_lag_ms"` // wire
}

// Result is one point: the real run and its simulated twin, side by side. Every time is in the
// model's milliseconds (wire time divided by the time scale).
type Result struct {
	Setup        string    `json:"setup"`
	LoadPct      float64   `json:"load_pct"`
	Cancellation string    `json:"cancellation"`
	Protocol     string    `json:"protocol"`
	Seed         uint64    `json:"seed"`
	Real         sim.Point `json:"real"`
	Sim          sim.Point `json:"sim"`       // the simulated run with the same seed
	SimSeeds     []uint64  `json:"sim_seeds"` // the seeds the agreement compares with (Sim's first)
	// twin is the client delay the simulated twin carried: the point's own measured delays
	// (see clientDelays and closedDelay).
	twin sim.ClientDelay
	// TwinInFlight is, for a closed loop, how many calls its twin keeps in flight at the rate
	// the callers reached (Little's law: the rate times the twin's mean latency, of its first
	// seed): the callers themselves, when the twin's delays are the closed loop's. A check,
	// not an input; left out when some of the twin's calls failed (it has no mean latency).
	TwinInFlight float64     `json:"twin_in_flight,omitempty"`
	Agreement    Agreement   `json:"agreement"`
	Generator    diagnostics `json:"generator"`
}

// Report is everything a run produced; report.json is this, encoded.
type Report struct {
	Model       Model         `json:"model"`
	Calibration []Calibration `json:"calibration"`
	Points      []Result      `json:"points"`
	// Stopped says why the run stopped before every point ran (the generator fell behind);
	// empty when it ran to the end.
	Stopped string `json:"stopped,omitempty"`
	// WallSeconds is how long the run took.
	WallSeconds float64 `json:"wall_s"`
}

// Agrees reports whether every point agrees with the simulator and the run was not stopped.
func (r Report) Agrees() bool {
	if r.Stopped != "" || len(r.Points) == 0 {
		return false
	}
	for _, p := range r.Points {
		if !p.Agreement.OK {
			return false
		}
	}
	return true
}

type job struct {
	setup    sim.Setup
	load     float64
	mode     string
	protocol string
	seed     uint64
}

// run calibrates, then runs every point real and simulated. progress, when not nil, is called
// after each point. A point whose generator falls behind stops the run: the report holds the
// points that ended before it, and Stopped says why; the error is returned too.
func run(ctx context.Context, cfg runConfig, progress func(done, total int, r Result)) (Report, error) {
	start := time.Now()
	wireSvc := scaleDist(cfg.service, cfg.timeScale)
	sets, err := setups(cfg.setups, cfg.hedgeDelay, cfg.timeScale)
	if err != nil {
		return Report{}, err
	}
	cfg.parallel = pointsAtOnce(cfg)
	rep := Report{Model: runModel(cfg)}
	cal, err := calibrateAll(ctx, cfg, wireSvc, &rep)
	if err != nil {
		return rep, err
	}
	jobs, order := planJobs(cfg, sets)
	results, ran, errs := runJobs(ctx, cfg, jobs, order, wireSvc, cal, progress)
	for i := range jobs {
		if ran[i] {
			rep.Points = append(rep.Points, results[i])
		}
	}
	rep.WallSeconds = time.Since(start).Seconds()
	for i, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			j := jobs[i]
			rep.Stopped = fmt.Sprintf("%s, %v%% load, %s, %s, seed %d: %v", j.setup.Name, j.load, j.mode, j.protocol, j.seed, e)
			return rep, e
		}
	}
	if len(rep.Points) < len(jobs) {
		err := ctx.Err()
		if err == nil {
			err = errors.New("hedgeload: the run stopped before every point ran")
		}
		rep.Stopped = err.Error()
		return rep, err
	}
	return rep, nil
}

// pointsAtOnce is how many points of cfg run at once: -parallel, but no more than there are
// points, and one in a closed loop, whose pace is the CPU it gets (two closed loops at once
// would each get half of it). It is what a run that fell behind is told it ran, not -parallel.
func pointsAtOnce(cfg runConfig) int {
	if cfg.callers > 0 {
		return 1
	}
	points := len(cfg.setups) * len(cfg.loads) * len(cfg.modes) * len(cfg.protocols) * len(cfg.seeds)
	return max(1, min(cfg.parallel, points))
}

// runModel is the run's parameters as report.json's "model".
func runModel(cfg runConfig) Model {
	return Model{
		Model: sim.Model{
			Workers:        cfg.workers,
			ServiceTime:    cfg.service.String(),
			MeanServiceMs:  float64(cfg.service.Mean()) / 1e6,
			HedgeDelayMs:   float64(cfg.hedgeDelay) / 1e6,
			Calls:          cfg.calls,
			WarmupFraction: cfg.warmup,
			Seeds:          cfg.seeds,
			LoadsPct:       cfg.loads,
			Setups:         cfg.setups,
			Cancellations:  cfg.modes,
			Family:         sim.FamilyReference,
			Replicas:       cfg.replicas,
			Balancer:       cfg.balancer,
			Clients:        max(cfg.clients, 1),
		},
		Protocols:   cfg.protocols,
		TimeScale:   cfg.timeScale,
		ServerScale: serverScale(cfg),
		BandPct:     cfg.band,
		MaxLagMs:    float64(cfg.maxLag) / 1e6,
	}
}

// calibration is what the calibration measured, per protocol, for the points to use.
type calibration struct {
	slack map[string]time.Duration // wire time
}

// calibrateAll calibrates one protocol at a time, at the highest load's arrival rate at one
// server (its one server has the workers of one replica), and appends each protocol's
// calibration to rep.
func calibrateAll(ctx context.Context, cfg runConfig, wireSvc sim.Distribution, rep *Report) (calibration, error) {
	n := calibrationCalls(cfg)
	cal := calibration{
		slack: map[string]time.Duration{},
	}
	calRate := rate(slices.Max(cfg.loads), cfg.workers, 1, wireSvc)
	if cfg.callers > 0 {
		calRate = closedCalibrationRate
	}
	for _, proto := range cfg.protocols {
		c, err := calibrate(ctx, proto, cfg.workers, wireSvc, n, calRate, cfg.callers)
		if err != nil {
			return cal, err
		}
		rep.Calibration = append(rep.Calibration, c)
		cal.slack[proto] = time.Duration(c.SleepP50Us * 1e3)
	}
	return cal, nil
}

// planJobs lists every point of the run, in report order, and the order to run them in:
// longest points (lowest load) first, so parallel runs end together.
func planJobs(cfg runConfig, sets []sim.Setup) (jobs []job, order []int) {
	for _, st := range sets {
		for _, l := range cfg.loads {
			for _, m := range cfg.modes {
				for _, proto := range cfg.protocols {
					for _, sd := range cfg.seeds {
						jobs = append(jobs, job{st, l, m, proto, sd})
					}
				}
			}
		}
	}
	order = make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case jobs[a].load < jobs[b].load:
			return -1
		case jobs[a].load > jobs[b].load:
			return 1
		}
		return 0
	})
	return jobs, order
}

// runJobs runs the jobs in order, cfg.parallel at a time. The first error other than a
// cancellation stops the others. Each job's result, whether it ran, and its error are
// returned by the job's index.
func runJobs(ctx context.Context, cfg runConfig, jobs []job, order []int, wireSvc sim.Distribution, cal calibration, progress func(done, total int, r Result)) ([]Result, []bool, []error) {
	if progress != nil {
		progress(0, len(jobs), Result{})
	}
	results := make([]Result, len(jobs))
	ran := make([]bool, len(jobs))
	errs := make([]error, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done := 0
	next := 0
	var wg sync.WaitGroup
	for range max(1, min(cfg.parallel, len(jobs))) {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= len(order) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := order[next]
				next++
				mu.Unlock()
				p := jobs[i].protocol
				r, err := runPoint(ctx, cfg, jobs[i], wireSvc, cal.slack[p])
				mu.Lock()
				if err != nil {
					if errs[i] = err; !errors.Is(err, context.Canceled) {
						cancel()
					}
				} else {
					results[i], ran[i] = r, true
					done++
					if progress != nil {
						progress(done, len(jobs), r)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return results, ran, errs
}

// pointDeadline is how long a point at load (%) may run: twice the time its calls take to
// send, with room, plus a minute of model time. Open-loop calls are sent at the load's
// rate; a closed loop's (no load: its rate is 0) by its callers, as many at once as there are
// workers to serve them.
func pointDeadline(cfg runConfig, load float64, wireSvc sim.Distribution) time.Duration {
	var expected time.Duration
	if cfg.callers > 0 {
		expected = time.Duration(float64(cfg.calls) * float64(wireSvc.Mean()) / float64(min(cfg.callers, cfg.workers*cfg.replicas)) * 1.5)
	} else {
		expected = time.Duration(float64(cfg.calls) / rate(load, cfg.workers, cfg.replicas, wireSvc) * 1.5 * 1e9)
	}
	return 2*expected + time.Duration(float64(60*time.Second)*cfg.timeScale)
}

// runPoint runs one point for real, then simulates it, and compares them.
func runPoint(ctx context.Context, cfg runConfig, j job, wireSvc sim.Distribution, slack time.Duration) (Result, error) {
	s := cfg.timeScale
	pc := pointConfig{
		setup:       j.setup,
		loadPct:     j.load,
		mode:        j.mode,
		protocol:    j.protocol,
		seed:        j.seed,
		workers:     cfg.workers,
		replicas:    cfg.replicas,
		clients:     max(cfg.clients, 1),
		balancer:    twinBalancer(cfg, j),
		service:     wireSvc,
		slack:       slack,
		serverScale: serverScale(cfg),
		calls:       cfg.calls,
		warmup:      cfg.warmup,
		maxLag:      cfg.maxLag,
		concurrency: cfg.callers,
		callTimeout: time.Duration(float64(30*time.Second) * s),
		deadline:    pointDeadline(cfg, j.load, wireSvc),
	}
	real, diag, err := runReal(ctx, pc)
	if err == nil {
		err = ctx.Err() // another point stopped the run: this one's calls were cut short
	}
	if err != nil {
		return Result{}, err
	}
	// The twin's calls are late by this point's own measured client delays (see
	// clientDelays): what the model lacks outside the queue, nothing of the queue itself.
	var delay sim.ClientDelay
	var tie time.Duration
	switch {
	case len(diag.lags) > 0:
		delay = measuredDelay(diag.lags, diag.rest)
	case !real.Collapse:
		return Result{}, fmt.Errorf("hedgeload: %s, %v%% load: no measured call was answered by its first attempt, so its client delay is unknown", j.setup.Name, j.load)
	}
	// A real collapse has no figures, nor delays: its twin runs without, and the comparison
	// asks only whether it collapses too.
	if cfg.callers > 0 {
		// The twin is offered the rate the closed loop reached (see closedDelay).
		j.load = closedLoad(diag.PerSecond, cfg.workers, cfg.replicas, wireSvc)
		real.LoadPct = j.load
		if len(diag.rest) > 0 {
			delay, tie = closedDelay(diag.sends, diag.restAt, diag.timers, diag.hedged), tieDelay(j.mode, diag.rest, diag.overheld)
		}
	}
	k := cfg.simSeeds
	if k == 0 {
		k = 10
	}
	var sims []sim.Point
	var seeds []uint64
	for i := range k {
		seed := j.seed + uint64(i)*1_000_003 // other seeds of the same model, far from the real ones
		sp, err := simulate(cfg, j, wireSvc, seed, delay, tie)
		if err != nil {
			return Result{}, err
		}
		sims = append(sims, inModel(sp, s))
		seeds = append(seeds, seed)
	}
	var twinInFlight float64
	if cfg.callers > 0 && !sim.IsFailed(sims[0].MeanMs) {
		twinInFlight = diag.PerSecond * sims[0].MeanMs * s / 1e3 // Little: rate × mean latency
	}
	real = inModel(real, s)
	return Result{
		Setup:        j.setup.Name,
		LoadPct:      j.load,
		Cancellation: j.mode,
		Protocol:     j.protocol,
		Seed:         j.seed,
		Real:         real,
		Sim:          sims[0],
		SimSeeds:     seeds,
		twin:         delay,
		TwinInFlight: twinInFlight,
		Agreement:    compare(real, sims, measuredCalls(real.Calls, cfg.warmup), cfg.band),
		Generator:    diag,
	}, nil
}

// twinBalancer is the simulator's balancer for job j's twin: the run's, but over gRPC with
// replicas, hedgegrpc's own choice: p2c, on the servers' reports when they send any.
func twinBalancer(cfg runConfig, j job) string {
	if j.protocol != GRPC || cfg.replicas <= 1 {
		return cfg.balancer
	}
	return sim.BalancerP2C
}

// serverScale is cfg's -server-scale, 1 when unset.
func serverScale(cfg runConfig) float64 {
	if cfg.serverScale > 0 {
		return cfg.serverScale
	}
	return 1
}

// simulate runs the point's twin in the simulator, with the given seed: the same model, the
// same (scaled) setup, the client late by delay and its cancellations by tie.
func simulate(cfg runConfig, j job, wireSvc sim.Distribution, seed uint64, delay sim.ClientDelay, tie time.Duration) (sim.Point, error) {
	return sim.Run(sim.Params{
		ClientDelay:    delay,
		TieDelay:       tie,
		Workers:        cfg.workers,
		Replicas:       cfg.replicas,
		Clients:        max(cfg.clients, 1),
		Balancer:       twinBalancer(cfg, j),
		Service:        wireSvc,
		Calls:          cfg.calls,
		WarmupFraction: cfg.warmup,
	}, j.setup, j.load, j.mode, seed)
}

// calibrationCalls is the calibration's calls and sleeps (-calibrateN; 2,000 unless set).
func calibrationCalls(cfg runConfig) int {
	if cfg.calibrateN > 0 {
		return cfg.calibrateN
	}
	return 2000
}
