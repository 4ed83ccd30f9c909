package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Arrivals shapes the arrival rate over time; the zero value is the reference model's constant
// rate. The rate stays a Poisson process's, at the point's rate times a multiplier that changes
// at fixed times. Times given as fractions are fractions of the run's span: Calls / rate, how
// long the calls take to arrive at the point's rate.
type Arrivals struct {
	// BurstEvery > 0 makes the arrivals bursty (on/off): each BurstEvery, BurstFor at
	// BurstRate × the rate, then the rest of the cycle at the rate that keeps the mean
	// (BurstFor must be shorter than BurstEvery, for there to be a rest, and BurstRate·BurstFor
	// must not exceed BurstEvery). A run whose rate changes more than about a million times
	// between two calls (a BurstEvery of nanoseconds) is refused with an error.
	BurstEvery, BurstFor time.Duration
	BurstRate            float64
	// StepAt > 0 makes a load step: until StepAt (a fraction of the span) arrivals come at
	// StepFrom × the rate, then at the rate.
	StepAt, StepFrom float64
}

func (a Arrivals) zero() bool { return a == Arrivals{} }

func (a Arrivals) check() error {
	if a.BurstEvery < 0 || a.BurstFor < 0 || a.BurstFor > a.BurstEvery || (a.BurstEvery > 0 && a.BurstFor == a.BurstEvery) || a.BurstRate < 0 ||
		float64(a.BurstFor)*a.BurstRate > float64(a.BurstEvery) || math.IsInf(a.BurstRate, 0) || math.IsNaN(a.BurstRate) {
		return fmt.Errorf("sim: Arrivals bursts need 0 <= BurstFor < BurstEvery and 0 <= BurstRate·BurstFor <= BurstEvery, got %+v", a)
	}
	if !(a.StepAt >= 0 && a.StepAt < 1) || a.StepFrom < 0 || math.IsNaN(a.StepFrom) || math.IsInf(a.StepFrom, 0) {
		return fmt.Errorf("sim: Arrivals step needs StepAt in [0, 1) and a finite StepFrom >= 0, got %+v", a)
	}
	return nil
}

// multiplier compiles a into the engine's rate function for a run of the given span (ns).
func (a Arrivals) multiplier(span float64) func(t int64) (float64, int64) {
	if a.zero() {
		return nil
	}
	every, on := int64(a.BurstEvery), int64(a.BurstFor)
	low := 1.0
	if every > 0 && on < every {
		low = (float64(every) - a.BurstRate*float64(on)) / float64(every-on)
	}
	step := int64(a.StepAt * span)
	return func(t int64) (float64, int64) {
		m, until := 1.0, int64(0)
		if a.StepAt > 0 && t < step {
			m, until = a.StepFrom, step
		}
		if every > 0 {
			c := t / every * every
			end := c + every
			if t < c+on {
				m *= a.BurstRate
				end = c + on
			} else {
				m *= low
			}
			if until == 0 || end < until {
				until = end
			}
		}
		return m, until
	}
}

// Slowdown multiplies the service time of the requests sent to a replica between From and To
// (fractions of the run's span; To 0 = until the end) by Factor: a brownout when it applies to
// every replica, a degraded replica otherwise.
type Slowdown struct {
	Replica  int // the replica it applies to; -1 = every replica
	From, To float64
	Factor   float64
}

// Pauses are periodic stop-the-world pauses (a garbage collector, a VM migration): every Every,
// a pausing replica's workers stop for Length; the pauses of different replicas are not
// synchronised (each has its own phase, drawn from the seed). Requests in service when a pause
// starts finish that much later; none starts during a pause.
type Pauses struct {
	Every, Length time.Duration
	// Replicas is how many replicas pause, the first ones. 0 = every replica.
	Replicas int
}

func serviceMultiplier(sd []Slowdown, span float64) func(int, int64) float64 {
	if len(sd) == 0 {
		return nil
	}
	type win struct {
		rep      int
		from, to int64
		f        float64
	}
	ws := make([]win, len(sd))
	for i, d := range sd {
		to := int64(math.MaxInt64)
		if d.To > 0 {
			to = fractionOf(d.To, span)
		}
		ws[i] = win{d.Replica, fractionOf(d.From, span), to, d.Factor}
	}
	return func(rp int, t int64) float64 {
		m := 1.0
		for i := range ws {
			if w := &ws[i]; (w.rep < 0 || w.rep == rp) && t >= w.from && t < w.to {
				m *= w.f
			}
		}
		return m
	}
}

// Pareto is a heavy-tailed distribution: P(X > x) = (Min/x)^Alpha for x ≥ Min, capped at Max
// (a request that would take longer takes Max: a server's own timeout). With Alpha ≤ 2 its
// variance is infinite below the cap, like the latency of services with a long tail.
type Pareto struct {
	Min   time.Duration
	Alpha float64
	Max   time.Duration
}

// Sample draws Min·U^(-1/Alpha), capped at Max.
func (d Pareto) Sample(r *rand.Rand) time.Duration {
	x := float64(d.Min) * math.Pow(1-r.Float64(), -1/d.Alpha)
	return time.Duration(min(x, float64(d.Max)))
}

// Mean is E[min(X, Max)] = Min + Min^α (Max^(1-α) - Min^(1-α)) / (1-α) (Min·(1 + ln(Max/Min)) for α = 1).
func (d Pareto) Mean() time.Duration {
	m, x := float64(d.Min), float64(d.Max)
	if d.Alpha == 1 {
		return time.Duration(math.Round(m * (1 + math.Log(x/m))))
	}
	a := d.Alpha
	return time.Duration(math.Round(m + math.Pow(m, a)*(math.Pow(x, 1-a)-math.Pow(m, 1-a))/(1-a)))
}

func (d Pareto) String() string {
	return fmt.Sprintf("pareto(min %v, alpha %g, max %v)", d.Min, d.Alpha, d.Max)
}

// Family is a scenario family of the safety scorecard: a service model beside the reference one,
// chosen to stand for a kind of real service. Its Params hold the model (Workers, Service,
// Clients, Replicas, Balancer, Arrivals, Slowdowns, Pauses); Calls and the run's bounds come
// from the run.
type Family struct {
	Name  string // stable: scripts and the -family flag use it
	About string // one line for reports
	// Stragglers is the share of service times that are stragglers (at least ten times the
	// median): the families where hedging must pay off (SIMULATION.md's payoff check) have 2 %
	// or more.
	Stragglers float64
	// MaxLoadPct, when set, is the highest load the scorecard runs the family at: a fleet that
	// must survive losing a replica is provisioned with that much headroom (N+1), and above it
	// no configuration can keep the calls within their deadline.
	MaxLoadPct float64
	Params     Params
}

// Family names.
const (
	FamilyReference          = "reference"
	FamilyHeavierStragglers  = "heavier-stragglers"
	FamilyFrequentStragglers = "frequent-stragglers"
	FamilyNoStragglers       = "no-stragglers"
	FamilyBimodal            = "bimodal"
	FamilyHeavyTailed        = "heavy-tailed"
	FamilyFewWorkers         = "few-workers"
	FamilyManyWorkers        = "many-workers"
	FamilySeveralClients     = "several-clients"
	FamilyBursty             = "bursty"
	FamilyBrownout           = "brownout"
	FamilyLoadStep           = "load-step"
	FamilyBusyClient         = "busy-client"
	// Replica families: 4 replicas × 4 workers, each with its own queue, behind p2c.
	FamilyReplicaPause     = "replica-pause"
	FamilyReplicaPausesAll = "replica-pauses"
	FamilyReplicaSlow      = "replica-slow"
	FamilyReplicaDegrading = "replica-degrading"
	// Replica failure families: the same fleet, one replica failing, callers giving up after 1 s.
	FamilyReplicaRefusing  = "replica-refusing"
	FamilyReplicaBlackhole = "replica-blackhole"
	FamilyReplicaFlapping  = "replica-flapping"
	// Fleet families: many client processes share the dependency, each with its own policy
	// and a thin slice of the traffic.
	FamilyFleet           = "fleet"
	FamilyFleetLarge      = "fleet-large"
	FamilyFleetSequential = "fleet-sequential"
	FamilyUnevenClients   = "uneven-clients"
	FamilySmallReplicas   = "small-replicas"
	FamilyDeadline        = "deadline"
)

// deadlineTimeout is the deadline family's: every caller gives up 50 ms after its call
// arrived, five times the median service time and three times the p95 of latency at light load.
const deadlineTimeout = 50 * time.Millisecond

// replicas4 is p on 4 replicas of 4 workers behind p2c.
func replicas4(p Params) Params {
	p.Replicas, p.Workers, p.Balancer = 4, 4, BalancerP2C
	return p
}

func lognormal(median time.Duration, sigma float64) LogNormal {
	return LogNormal{Median: median, Sigma: sigma}
}

// Families returns every scenario family, the reference model first. Each stands for a kind of
// service a user may hedge:
//
//   - reference: SIMULATION.md's model, 16 workers, the reference mixture (2 % hiccups of
//     100–300 ms).
//   - heavier-stragglers: the hiccups take 300 ms–1 s (a cold cache that goes to disk, a retry
//     inside the server).
//   - frequent-stragglers: 5 % hiccups (a noisy neighbour).
//   - no-stragglers: exponential service times, mean 10 ms: nothing for a hedge to beat.
//   - bimodal: 90 % fast (median 5 ms), 10 % slow (median 40 ms): two kinds of request, no
//     stragglers.
//   - heavy-tailed: Pareto, minimum 5 ms, α 1.5, capped at 10 s.
//   - few-workers: the reference mixture on 4 workers (a small pool, where a copy is a big share
//     of capacity).
//   - many-workers: the reference mixture on 64 workers.
//   - several-clients: 4 independent clients, each with its own policy, each seeing a quarter
//     of the calls.
//   - bursty: each second, 200 ms at 3× the mean rate, the rest at half of it.
//   - brownout: every service time × 1.5 for 3 % of the run (about 10 s at 50 % load and
//     200,000 calls), from 30 % of it.
//   - load-step: half the load for the first 30 % of the run, then the full load.
//   - busy-client: the reference model, with the client short of CPU for 5 s in every 10:
//     each answer it receives reaches it late by an exponential delay of mean 6 ms, each of
//     its timers fires late by one of mean 0.375 ms (a sixteenth: a timer wakes one
//     goroutine, an answer passes through several, as measured on a real busy client);
//     the servers' queues do not change. Its median latency moves by 40 %, with no backlog
//     anywhere.
//
// and four with replicas, each 4 replicas × 4 workers with their own queues behind a p2c
// balancer, the reference mixture, a hedge going to a replica its call has not used:
//
//   - replica-pause: one replica stops the world for 100 ms every 2 s (a garbage collector).
//   - replica-pauses: every replica does, at unsynchronised times.
//   - replica-slow: one replica serves 3× slower throughout (a noisy neighbour, a cold cache).
//   - replica-degrading: one replica becomes 4× slower half-way through the run.
//
// and three where a replica fails (callers give up on a call after 1 s; the client's view of
// each replica's health is the core replica package's outlier detection; the scorecard runs them
// up to 70 % load, the most a fleet of 4 can carry on 3):
//
//   - replica-refusing: one replica refuses connections for 10 s from half-way (a crash, a
//     restart).
//   - replica-blackhole: one replica swallows every request for 10 s from half-way (a network
//     partition, a hung process).
//   - replica-flapping: from a fifth of the run on, one replica refuses connections for 1 s
//     in every 4 s.
//
// and five fleets, where each client process has its own policy and learns only from its own
// calls:
//
//   - fleet: 32 clients, each making 1/32 of the calls, on the reference model.
//   - fleet-large: 256 clients.
//   - fleet-sequential: 32 clients, each with at most one call in flight (a CLI, a batch
//     job, a request-per-goroutine worker): a call that arrives while its client is busy
//     waits in the client, its latency counted from its arrival.
//   - uneven-clients: 32 clients, one of them making half the calls, the other 31 sharing
//     the rest.
//   - small-replicas: 8 replicas × 2 workers behind a random balancer, 8 clients: small
//     queues that a random balancer fills unevenly, where a replica that is merely busy
//     looks like one in trouble.
//
// and one with a caller's deadline:
//
//   - deadline: the reference model, each caller giving up on its call 50 ms after it
//     arrived (Params.Timeout): every straggler that no hedge rescues in time fails. The
//     scorecard's rule that a setup fails no more calls than no hedge becomes: it misses no
//     more deadlines.
//
// In these the load is a share of the capacity left (see Params.Replicas): a replica 3× slower
// serves a third of what it did, so 95 % load still leaves the fleet 5 % of headroom.
func Families() []Family {
	ref := ReferenceMixture()
	return []Family{
		{Name: FamilyReference, About: "reference model: 16 workers, 2 % hiccups of 100–300 ms", Stragglers: 0.02, Params: Params{}},
		{Name: FamilyHeavierStragglers, About: "2 % hiccups of 300 ms–1 s", Stragglers: 0.02, Params: Params{Service: Mixture{Components: []Component{
			{Weight: 0.98, Dist: lognormal(10*time.Millisecond, 0.25)},
			{Weight: 0.02, Dist: Uniform{Min: 300 * time.Millisecond, Max: time.Second}},
		}}}},
		{Name: FamilyFrequentStragglers, About: "5 % hiccups of 100–300 ms", Stragglers: 0.05, Params: Params{Service: Mixture{Components: []Component{
			{Weight: 0.95, Dist: lognormal(10*time.Millisecond, 0.25)},
			{Weight: 0.05, Dist: Uniform{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}},
		}}}},
		{Name: FamilyNoStragglers, About: "exponential service times, mean 10 ms", Params: Params{Service: Exponential{MeanTime: 10 * time.Millisecond}}},
		{Name: FamilyBimodal, About: "90 % median 5 ms, 10 % median 40 ms", Params: Params{Service: Mixture{Components: []Component{
			{Weight: 0.9, Dist: lognormal(5*time.Millisecond, 0.2)},
			{Weight: 0.1, Dist: lognormal(40*time.Millisecond, 0.2)},
		}}}},
		{Name: FamilyHeavyTailed, About: "Pareto: minimum 5 ms, α 1.5, capped at 10 s", Params: Params{Service: Pareto{Min: 5 * time.Millisecond, Alpha: 1.5, Max: 10 * time.Second}}},
		{Name: FamilyFewWorkers, About: "reference mixture on 4 workers", Stragglers: 0.02, Params: Params{Workers: 4, Service: ref}},
		{Name: FamilyManyWorkers, About: "reference mixture on 64 workers", Stragglers: 0.02, Params: Params{Workers: 64, Service: ref}},
		{Name: FamilySeveralClients, About: "4 clients, each with its own policy", Stragglers: 0.02, Params: Params{Clients: 4}},
		{Name: FamilyBursty, About: "each second 200 ms at 3× the rate, the rest at 0.5×", Stragglers: 0.02, Params: Params{Arrivals: Arrivals{
			BurstEvery: time.Second, BurstFor: 200 * time.Millisecond, BurstRate: 3,
		}}},
		{Name: FamilyBrownout, About: "service × 1.5 for 3 % of the run, from 30 %", Stragglers: 0.02, Params: Params{Slowdowns: []Slowdown{
			{Replica: -1, From: 0.30, To: 0.33, Factor: 1.5},
		}}},
		{Name: FamilyLoadStep, About: "half the load for the first 30 % of the run, then the full load", Stragglers: 0.02, Params: Params{Arrivals: Arrivals{
			StepAt: 0.3, StepFrom: 0.5,
		}}},
		{Name: FamilyBusyClient, About: "the client short of CPU 5 s in every 10: its answers and timers ~6 ms late", Stragglers: 0.02, Params: Params{
			ClientDelay: ClientDelay{Every: 10 * time.Second, For: 5 * time.Second, Busy: 6 * time.Millisecond, Timers: 375 * time.Microsecond},
		}},
		{Name: FamilyReplicaPause, About: "4 replicas × 4 workers (p2c), one pausing 100 ms every 2 s", Stragglers: 0.02, Params: replicas4(Params{
			Pauses: Pauses{Every: 2 * time.Second, Length: 100 * time.Millisecond, Replicas: 1},
		})},
		{Name: FamilyReplicaPausesAll, About: "4 replicas × 4 workers (p2c), each pausing 100 ms every 2 s, unsynchronised", Stragglers: 0.02, Params: replicas4(Params{
			Pauses: Pauses{Every: 2 * time.Second, Length: 100 * time.Millisecond},
		})},
		{Name: FamilyReplicaSlow, About: "4 replicas × 4 workers (p2c), one 3× slower", Stragglers: 0.02, Params: replicas4(Params{
			Slowdowns: []Slowdown{{Replica: 0, Factor: 3}},
		})},
		{Name: FamilyReplicaDegrading, About: "4 replicas × 4 workers (p2c), one 4× slower from half-way", Stragglers: 0.02, Params: replicas4(Params{
			Slowdowns: []Slowdown{{Replica: 0, From: 0.5, Factor: 4}},
		})},
		{Name: FamilyReplicaRefusing, MaxLoadPct: 70, About: "4 replicas × 4 workers (p2c), one refusing connections for 10 s; 1 s deadline", Stragglers: 0.02, Params: replicas4(Params{
			Failures: []Failure{{Replica: 0, Kind: FailRefuse, From: 0.5, For: 10 * time.Second}}, Timeout: time.Second,
		})},
		{Name: FamilyReplicaBlackhole, MaxLoadPct: 70, About: "4 replicas × 4 workers (p2c), one swallowing requests for 10 s; 1 s deadline", Stragglers: 0.02, Params: replicas4(Params{
			Failures: []Failure{{Replica: 0, Kind: FailBlackhole, From: 0.5, For: 10 * time.Second}}, Timeout: time.Second,
		})},
		{Name: FamilyReplicaFlapping, MaxLoadPct: 70, About: "4 replicas × 4 workers (p2c), one refusing 1 s in every 4 s; 1 s deadline", Stragglers: 0.02, Params: replicas4(Params{
			Failures: []Failure{{Replica: 0, Kind: FailRefuse, From: 0.2, FlapEvery: 4 * time.Second, FlapFor: time.Second}}, Timeout: time.Second,
		})},
		{Name: FamilyFleet, About: "32 clients, each with its own policy and 1/32 of the calls", Stragglers: 0.02, Params: Params{Clients: 32}},
		{Name: FamilyFleetLarge, About: "256 clients, each with its own policy and 1/256 of the calls", Stragglers: 0.02, Params: Params{Clients: 256}},
		{Name: FamilyFleetSequential, About: "32 clients, each with one call in flight at most (the rest wait in the client)", Stragglers: 0.02, Params: Params{Clients: 32, ClientInFlight: 1}},
		{Name: FamilyUnevenClients, About: "32 clients, one making half the calls", Stragglers: 0.02, Params: Params{Clients: 32, HeavyClientShare: 0.5}},
		{Name: FamilySmallReplicas, About: "8 replicas × 2 workers behind a random balancer, 8 clients", Stragglers: 0.02, Params: Params{
			Replicas: 8, Workers: 2, Balancer: BalancerRandom, Clients: 8,
		}},
		{Name: FamilyDeadline, About: "reference model, each call failing 50 ms after it arrives", Stragglers: 0.02, Params: Params{Timeout: deadlineTimeout}},
	}
}

// FamilyNames are the names of Families, in order.
func FamilyNames() []string {
	var ns []string
	for _, f := range Families() {
		ns = append(ns, f.Name)
	}
	return ns
}

// FamilyByName returns the family called name.
func FamilyByName(name string) (Family, error) {
	fs := Families()
	if i := slices.IndexFunc(fs, func(f Family) bool { return f.Name == name }); i >= 0 {
		return fs[i], nil
	}
	return Family{}, fmt.Errorf("sim: unknown family %q (known: %s)", name, strings.Join(FamilyNames(), ", "))
}

// withModel returns p with the model of m filled in where p leaves it zero: p's own Workers,
// Service, Clients and so on win over the family's.
func (p Params) withModel(m Params) Params {
	if p.Workers == 0 {
		p.Workers = m.Workers
	}
	if p.Service == nil {
		p.Service = m.Service
	}
	if p.Clients == 0 {
		p.Clients = m.Clients
	}
	if p.ClientInFlight == 0 {
		p.ClientInFlight = m.ClientInFlight
	}
	if p.HeavyClientShare == 0 {
		p.HeavyClientShare = m.HeavyClientShare
	}
	if p.Replicas == 0 {
		p.Replicas = m.Replicas
	}
	if p.Balancer == "" {
		p.Balancer = m.Balancer
	}
	if p.TieDelay == 0 {
		p.TieDelay = m.TieDelay
	}
	if p.Arrivals.zero() {
		p.Arrivals = m.Arrivals
	}
	if p.Slowdowns == nil {
		p.Slowdowns = m.Slowdowns
	}
	if p.Pauses == (Pauses{}) {
		p.Pauses = m.Pauses
	}
	if p.Failures == nil {
		p.Failures = m.Failures
	}
	if p.Timeout == 0 {
		p.Timeout = m.Timeout
	}
	if p.ClientDelay.zero() {
		p.ClientDelay = m.ClientDelay
	}
	return p
}

// Failure kinds (Failure.Kind).
const (
	// FailRefuse: the replica refuses connections: an attempt sent to it fails a round trip
	// later without reaching a server (an unsent attempt the core may resend at once elsewhere).
	FailRefuse = "refuse"
	// FailBlackhole: the replica swallows requests and never answers: an attempt sent to it
	// hangs until another attempt wins or the caller's deadline (Params.Timeout) ends the call.
	FailBlackhole = "blackhole"
)

// Failure makes one replica fail for a while: from From (a fraction of the run's span) for For
// (0 = until the end). With FlapEvery > 0 it flaps: failing for the first FlapFor of every
// FlapEvery, healthy for the rest. The replica's health, as the client sees it (outlier
// detection, ejection), is the core replica package's.
type Failure struct {
	Replica   int
	Kind      string // FailRefuse or FailBlackhole
	From      float64
	For       time.Duration
	FlapEvery time.Duration
	FlapFor   time.Duration
}

// refuseDelay is how long a refused connection takes to fail: a round trip on a local network.
const refuseDelay = int64(500 * time.Microsecond)

type failKind uint8

const (
	failNone failKind = iota
	failRefuse
	failBlackhole
)

// failureWindow is a Failure compiled for a run: absolute times in ns.
type failureWindow struct {
	replica            int
	kind               failKind
	from, to           int64 // to = MaxInt64: until the end
	flapEvery, flapFor int64
}

func compileFailures(fs []Failure, span float64) []failureWindow {
	if len(fs) == 0 {
		return nil
	}
	ws := make([]failureWindow, len(fs))
	for i, f := range fs {
		k := failRefuse
		if f.Kind == FailBlackhole {
			k = failBlackhole
		}
		from := fractionOf(f.From, span)
		to := int64(math.MaxInt64)
		if f.For > 0 {
			to = later(from, int64(f.For)) // a For of math.MaxInt64 wrapped into the past: no failure at all
		}
		ws[i] = failureWindow{f.Replica, k, from, to, int64(f.FlapEvery), int64(f.FlapFor)}
	}
	return ws
}

// fractionOf is the virtual time at fraction f (finite, >= 0) of a run's span, saturating: a
// fraction far past the run (1e30) is the end of time, where converting the product wrapped
// it to the most negative time, the start of the run.
func fractionOf(f, span float64) int64 {
	if x := f * span; x < 1<<63 {
		return int64(x)
	}
	return math.MaxInt64
}

func (f Failure) check(replicas int) error {
	if f.Replica < 0 || !finite(f.From) || f.Replica >= replicas || (f.Kind != FailRefuse && f.Kind != FailBlackhole) ||
		f.From < 0 || f.For < 0 || f.FlapEvery < 0 || f.FlapFor < 0 || (f.FlapEvery > 0 && (f.FlapFor <= 0 || f.FlapFor >= f.FlapEvery)) {
		return fmt.Errorf("sim: Failure needs Replica in [0, Replicas), Kind %q or %q, a finite From >= 0, For >= 0 and 0 < FlapFor < FlapEvery when flapping; got %+v", FailRefuse, FailBlackhole, f)
	}
	return nil
}

// failingAt is how replica rp fails at t, if it does.
func (s *sim) failingAt(rp int, t int64) failKind {
	for i := range s.failures {
		w := &s.failures[i]
		if w.replica != rp || t < w.from || t >= w.to {
			continue
		}
		if w.flapEvery > 0 && (t-w.from)%w.flapEvery >= w.flapFor {
			continue
		}
		return w.kind
	}
	return failNone
}
