// Package replica chooses which replica of a dependency an attempt goes to, and keeps track of
// which replicas are fit to receive attempts.
//
// A [Set] holds the replicas of one dependency, numbered 0 to n-1. [Set.Pick] chooses one for
// an attempt with the configured [Balancer] (power of two choices, random, round-robin or least
// outstanding), preferring, in this order, a replica that is not ejected and that the call has
// not used yet, then any replica that is not ejected, then the ejected ones (only when nothing
// else is left): a hedge or a retry goes to a replica its call has not tried whenever a healthy
// one exists. [Set.Done] ends the pick with its [Result], which feeds outlier detection: a
// replica that keeps failing fast (connections refused, resets before the request was written,
// TLS failures), keeps answering with failures (5xx) or keeps losing hedge races while answering
// nothing ([Slow]: latency-induced probation) is ejected, that is, no longer picked
// while healthy replicas remain, for a time that grows each time it is ejected again, and no
// more than a bounded share of the replicas is ejected at once. The scheme follows Envoy's
// outlier detection. A replica back from an ejection takes one attempt at a time until it
// answers one with a [Success] (see Set.tier).
//
// Replica choice and health are decisions, so they live here, beside the hedging state machine,
// where every driver reaches them: the HTTP and gRPC transports, which know replicas by address
// (see [Pool]), and the simulator, which knows them by number. Every method that depends on time
// takes it as an argument, a Set starts no goroutines, and with a fixed [Config.Seed] its picks
// are a deterministic function of the calls made, so a simulator can drive it on a virtual
// clock.
package replica

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrInvalidConfig is wrapped by every error [New] and [NewPool] return for an invalid
// configuration.
var ErrInvalidConfig = errors.New("replica: invalid Config")

// Balancer is how [Set.Pick] chooses among the replicas it may pick.
type Balancer uint8

const (
	// P2C (the default) draws two replicas at random and picks the one with fewer attempts
	// outstanding: almost as good as least-outstanding at avoiding a slow replica, without
	// every client herding onto the same least-loaded one.
	P2C Balancer = iota
	// Random picks uniformly at random.
	Random
	// RoundRobin picks the replicas in turn.
	RoundRobin
	// LeastOutstanding picks the replica with the fewest attempts outstanding (ties broken
	// from a random starting point).
	LeastOutstanding
)

// String returns the balancer's name as [ParseBalancer] reads it: "p2c", "random",
// "round-robin" or "least-outstanding".
func (b Balancer) String() string {
	switch b {
	case P2C:
		return "p2c"
	case Random:
		return "random"
	case RoundRobin:
		return "round-robin"
	case LeastOutstanding:
		return "least-outstanding"
	}
	return fmt.Sprintf("Balancer(%d)", uint8(b))
}

// ParseBalancer returns the balancer named s (see [Balancer.String]).
func ParseBalancer(s string) (Balancer, error) {
	for b := P2C; b <= LeastOutstanding; b++ {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown balancer %q (want p2c, random, round-robin or least-outstanding)", ErrInvalidConfig, s)
}

// Result is what happened to an attempt sent to a replica, as outlier detection counts it.
type Result uint8

const (
	// Success: the replica answered, well. It ends the replica's runs of failures.
	Success Result = iota
	// Failure: the replica answered with a failure that is its own (an HTTP 5xx, a gRPC
	// UNAVAILABLE or INTERNAL), or the exchange broke after the request was sent.
	Failure
	// Unreachable: the request never reached the replica (connection refused, a reset or EOF
	// before the request was written, a TLS handshake or DNS failure). It says the replica
	// cannot serve at all, so it ejects sooner than a Failure.
	Unreachable
	// Ignored: the attempt says nothing about the replica (it was cancelled because another
	// attempt won, or because its caller gave up, or the answer was a client error).
	Ignored
	// Slow: the attempt lost a hedge race, cancelled while still running after a copy on
	// another replica answered, having run at least the call's hedge threshold (the hedging
	// core says so: hedge.Action.Slow, hedge.LostSlow). One such loser says little, since
	// every replica has stragglers; a run of them with no success in between says the
	// replica has stopped answering while hedges hide it (it swallows requests, it hangs),
	// and ejects it (ConsecutiveSlow): latency-induced probation.
	Slow
)

// String returns "success", "failure", "unreachable", "ignored" or "slow".
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Unreachable:
		return "unreachable"
	case Ignored:
		return "ignored"
	case Slow:
		return "slow"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Defaults used for zero fields of [Config].
const (
	DefaultConsecutiveFailures    = 5
	DefaultConsecutiveUnreachable = 3
	DefaultConsecutiveSlow        = 5
	DefaultSlowFor                = 500 * time.Millisecond
	DefaultBaseEjection           = 30 * time.Second
	DefaultMaxEjection            = 300 * time.Second
	DefaultMaxEjectedPercent      = 10
)

// Config configures a [Set]. A zero field means the documented default, so the zero Config is
// a complete one: power of two choices, and outlier detection with Envoy's defaults (eject
// after 5 failures in a row, for 30 s times the number of times ejected, at most 300 s; at
// most 10 % of the replicas ejected at once, but always at least one of two or more), except
// that 3 unreachable attempts in a row also eject: a refused connection is unambiguous, and
// each one costs its call a resend; and 5 Slow results in a row over at least 500 ms eject too.
type Config struct {
	// Balancer chooses among the replicas a pick may take. The zero value is P2C.
	Balancer Balancer

	// ConsecutiveFailures ejects a replica after this many Failure results in a row (a
	// Success ends a run; Ignored does not). 0 means 5; negative turns the rule off.
	ConsecutiveFailures int

	// ConsecutiveUnreachable ejects a replica after this many Unreachable results in a row
	// (a Success ends a run; Ignored does not). 0 means 3; negative turns the rule off.
	ConsecutiveUnreachable int

	// ConsecutiveSlow ejects a replica after this many Slow results in a row that span at
	// least SlowFor (a Success ends a run; Ignored, Failure and Unreachable do not): the
	// replica has lost every race it ran for that long and answered nothing. A healthy
	// replica loses races for a few percent of its attempts, with successes in between, and
	// one that pauses (a garbage collector) answers again within its pause; a replica that
	// swallows requests while hedges rescue its calls gets there within SlowFor, instead of
	// waiting for calls no hedge rescued to time out. Such an ejection is short (four SlowFor
	// but at least 1 s, longer each time it recurs, at most MaxEjection), and it is made only
	// when the trouble is the replica's own: while the other replicas lose races too, the
	// fleet is loaded, and ejecting one would move its work onto replicas that cannot spare
	// the capacity (see [Set.Troubled]). 0 means 5; negative turns the rule off.
	ConsecutiveSlow int

	// SlowFor is how long a run of Slow results must last, with no success, before it
	// ejects (see ConsecutiveSlow). 0 means 500 ms; negative means no minimum, the count
	// alone decides.
	SlowFor time.Duration

	// BaseEjection is how long a replica's first ejection lasts. A replica ejected again
	// soon after it came back is ejected for BaseEjection times the number of its
	// ejections, so a replica that keeps failing is tried less and less often; each
	// BaseEjection it then spends without being ejected forgets one ejection. 0 means 30 s.
	BaseEjection time.Duration

	// MaxEjection caps how long one ejection lasts. 0 means 300 s, or BaseEjection if that is
	// longer.
	MaxEjection time.Duration

	// MaxEjectedPercent bounds the share of the replicas ejected at once, so that outlier
	// detection cannot take a whole fleet out when the trouble is not in the replicas (or is
	// in all of them): a replica due for ejection while the bound is reached stays in
	// service until another comes back. At least one replica of two or more may always be
	// ejected, and never every replica. 0 means 10; negative turns ejection off.
	MaxEjectedPercent int

	// Seed seeds the random draws of the balancers. 0 means a random seed; a simulator
	// passes its own so that runs repeat.
	Seed uint64

	// OnEjection, when not nil, is called each time a replica is ejected, with the time of
	// the result that ejected it and the time its ejection ends: where a replica that stopped
	// getting traffic shows up in logs and metrics. It is called synchronously, outside any
	// lock, in the goroutine that reported the result, so it must be fast; it may call the
	// Set.
	OnEjection func(replica int, now, until time.Time)
}

// validate names the first invalid field of c.
func (c Config) validate() error {
	switch {
	case c.Balancer > LeastOutstanding:
		return fmt.Errorf("%w: Config.Balancer %v is not a balancer", ErrInvalidConfig, c.Balancer)
	case c.BaseEjection < 0:
		return fmt.Errorf("%w: Config.BaseEjection must be >= 0, got %v", ErrInvalidConfig, c.BaseEjection)
	case c.MaxEjection < 0:
		return fmt.Errorf("%w: Config.MaxEjection must be >= 0, got %v", ErrInvalidConfig, c.MaxEjection)
	case c.MaxEjectedPercent > 100:
		return fmt.Errorf("%w: Config.MaxEjectedPercent must be <= 100, got %d", ErrInvalidConfig, c.MaxEjectedPercent)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if c.ConsecutiveUnreachable == 0 {
		c.ConsecutiveUnreachable = DefaultConsecutiveUnreachable
	}
	if c.ConsecutiveSlow == 0 {
		c.ConsecutiveSlow = DefaultConsecutiveSlow
	}
	if c.SlowFor == 0 {
		c.SlowFor = DefaultSlowFor
	}
	if c.BaseEjection == 0 {
		c.BaseEjection = DefaultBaseEjection
	}
	if c.MaxEjection == 0 {
		c.MaxEjection = max(DefaultMaxEjection, c.BaseEjection)
	}
	if c.MaxEjectedPercent == 0 {
		c.MaxEjectedPercent = DefaultMaxEjectedPercent
	}
	for c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	return c
}

// never is the ejection end of a replica never ejected.
const never = math.MinInt64

// replica is one replica's state, padded to its own cache line: picks on different cores
// read every replica and write the one they pick.
type replica struct {
	outstanding atomic.Int64
	until       atomic.Int64  // ticks at which the current or last ejection ends; never
	failing     atomic.Bool   // a run of failures is being counted (guards Success's lock)
	bad         atomic.Uint32 // the recent share of its results that were not a Success (see trouble.go)
	unanswered  atomic.Uint32 // attempts picked since its last answer (see trouble.go)
	trial       atomic.Bool   // ejected, and no Success since (see Set.tier)

	// guarded by Set.mu
	failures    int32 // Failure results in a row
	unreachable int32 // Unreachable results in a row
	slow        int32 // Slow results in a row
	slowSince   int64 // the tick of the first of them
	ejections   int   // the multiplier of the next ejection, less one

	lastAnswer atomic.Int64 // ticks of its latest Success (see trouble.go); never
}

// Set is the replicas of one dependency, numbered 0 to Len()-1: it picks one for each attempt
// and keeps each one's outstanding attempts and health. Build it with [New] (the zero value is
// not usable). It is safe for concurrent use, starts no goroutines and reads no clock: every
// method that depends on time takes it as an argument. Pick allocates nothing.
//
// Every method that takes a replica number i (Done, Report, Ejected, Outstanding, Stats,
// Troubled, SilentSince, ReportLoad, Load) panics with a "replica: index i out of range
// [0,n)" message when i is not in 0 to Len()-1: a number that is not one of the Set's is a
// caller's mistake (a number from another Set, such as a Pool's before its replicas changed),
// and an attempt's result or report quietly dropped, or counted against another replica,
// would hide it. The transports and the simulator end, report and route each attempt on the
// very Set they picked it from.
type Set struct {
	cfg     Config
	reps    []replica
	maxEj   int // replicas that may be ejected at once
	rng     atomic.Uint64
	rr      atomic.Uint64             // round-robin turns of first attempts
	rrAgain atomic.Uint64             // round-robin turns of hedges and retries, kept apart so they do not shift the first attempts
	anchor  atomic.Pointer[time.Time] // the first time seen; times are kept as ticks since it
	mu      sync.Mutex                // serialises failure counting and ejection
	ejected atomic.Int64              // ejections ever made, for Ejections
	lastEnd atomic.Int64              // the latest end of any ejection: none is ejected after it
	trials  atomic.Int32              // replicas with trial set
	lastBad int64                     // guarded by mu: the latest tick of a result fail counted; never

	loads atomic.Pointer[[]loadSlot] // the replicas' load reports (load.go); nil until the first
}

// New returns a Set of n replicas configured by cfg. It returns an error wrapping
// [ErrInvalidConfig] when n < 1 or cfg is invalid.
func New(n int, cfg Config) (*Set, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: a Set needs at least one replica, got %d", ErrInvalidConfig, n)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Set{cfg: cfg, reps: make([]replica, n)}
	for i := range s.reps {
		s.reps[i].until.Store(never)
		s.reps[i].lastAnswer.Store(never)
	}
	s.lastEnd.Store(never)
	s.lastBad = never
	s.rng.Store(cfg.Seed)
	s.rr.Store(cfg.Seed)
	s.rrAgain.Store(cfg.Seed)
	if cfg.MaxEjectedPercent > 0 {
		s.maxEj = min(max(n*cfg.MaxEjectedPercent/100, 1), n-1)
	}
	return s, nil
}

// Config returns the Set's configuration with every default filled in.
func (s *Set) Config() Config { return s.cfg }

// Len is the number of replicas.
func (s *Set) Len() int { return len(s.reps) }

// check panics when i is not one of the Set's replicas (see [Set]). It is small enough to
// inline: the panic's message is built out of line.
func (s *Set) check(i int) {
	if uint(i) >= uint(len(s.reps)) {
		outOfRange(i, len(s.reps))
	}
}

// outOfRange panics with the message of a replica number i outside [0,n).
//
//go:noinline
func outOfRange(i, n int) {
	panic(fmt.Sprintf("replica: index %d out of range [0,%d)", i, n))
}

// ticks converts now to nanoseconds since the first time the Set saw, which is safe for any
// time.Time, including the zero one a simulator may start from.
func (s *Set) ticks(now time.Time) int64 {
	a := s.anchor.Load()
	if a == nil {
		a = s.setAnchor(now)
	}
	return int64(now.Sub(*a))
}

// elapsed is tick t less tick u, held to the int64 range. Ticks saturate for times
// centuries from the anchor (as time.Time.Sub does: the zero time.Time, a clock far off),
// and the plain difference of two such ticks wraps round: a report or a result from the
// distant past would be from the future, and fresh for ever. Every age is taken with it.
func elapsed(t, u int64) int64 {
	d := t - u
	if (d < t) != (u > 0) { // overflowed
		if u > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return d
}

// setAnchor makes now the anchor unless another goroutine got there first. It is out of line
// so that ticks's argument does not escape, and Pick does not allocate.
//
//go:noinline
func (s *Set) setAnchor(now time.Time) *time.Time {
	s.anchor.CompareAndSwap(nil, &now)
	return s.anchor.Load()
}

// rand returns a pseudo-random 64-bit number: splitmix64 over an atomic counter, so that
// concurrent picks never wait for each other and a single-threaded driver with a fixed seed
// sees a fixed sequence.
func (s *Set) rand() uint64 {
	z := s.rng.Add(0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// randn maps 32 random bits to [0, n).
func randn(bits uint32, n int) int {
	return int(uint64(bits) * uint64(n) >> 32)
}

// tier ranks replica i for a pick at tick t: 0 healthy and unused by the call, 1 healthy
// and used, 2 ejected and unused, 3 ejected and used.
//
// A replica back from an ejection is on trial until it answers an attempt with a Success:
// while one attempt of this Set is outstanding on it, it ranks as ejected. Its ejection
// ended on a clock, not on evidence that it serves again, and a balancer that counts
// attempts outstanding sees a replica that has just come back as the lightest of all: one
// that still swallows requests would take a full share of the first attempts, each one lost
// until a hedge or the caller's deadline rescues it, for as long as outlier detection takes
// to eject it again. One attempt at a time costs a replica that serves again one service
// time of its share, and one that does not, one call at a time.
func (s *Set) tier(i int, t int64, used []int) int {
	r := 0
	if rep := &s.reps[i]; s.inForce(rep.until.Load(), t) || rep.trial.Load() && rep.outstanding.Load() > 0 {
		r = 2
	}
	if slices.Contains(used, i) {
		r++
	}
	return r
}

// Pick chooses the replica for an attempt at now and counts the attempt as outstanding on it
// until [Set.Done]. used lists the replicas the call has already sent attempts to: Pick
// chooses among the replicas that are not ejected and not in used; when there are none,
// among those not ejected; and only when every replica is ejected, among the ejected ones
// (not used first). Within that choice the Balancer decides. It allocates nothing.
func (s *Set) Pick(now time.Time, used []int) int {
	if len(s.reps) == 1 {
		s.reps[0].outstanding.Add(1)
		return 0
	}
	return s.pick(now, used, s.rand())
}

// PickWith is [Set.Pick] with the pick's random draw supplied by the caller instead of taken
// from the Set's own stream: every random choice of the pick (the two candidates of P2C, the
// replica of Random, the starting point of LeastOutstanding's scan) comes from draw, and the
// Set's stream is left untouched. A simulator passes a draw keyed by the call, so that a first
// attempt goes where it would have gone whatever the hedges before it drew, and a run with
// hedging and one without see the same first attempts on the same replicas (common random
// numbers). RoundRobin uses no draw.
func (s *Set) PickWith(now time.Time, used []int, draw uint64) int {
	if len(s.reps) == 1 {
		s.reps[0].outstanding.Add(1)
		return 0
	}
	return s.pick(now, used, draw)
}

// pick is Pick for two or more replicas, with z the pick's random bits: the low 32 choose the
// first candidate (or the replica, or the scan's start), the high 32 the second.
func (s *Set) pick(now time.Time, used []int, z uint64) int {
	n := len(s.reps)
	lo, hi := uint32(z), uint32(z>>32)
	t := s.ticks(now)
	if len(used) == 0 && s.lastEnd.Load() <= t && s.trials.Load() == 0 {
		// No replica is ejected or on trial and the call has used none (a first attempt,
		// the common case): every replica is a candidate, and the choice needs no scan. It is the
		// choice the general path below would make.
		var i int
		switch s.cfg.Balancer {
		case Random:
			i = randn(lo, n)
		case RoundRobin:
			i = int(s.rr.Add(1) % uint64(n))
		case LeastOutstanding:
			i = s.leastOutstanding(0, t, nil, lo)
		default:
			a, b := randn(lo, n), randn(hi, n-1)
			if b >= a {
				b++
			}
			i = a
			if s.lighter(a, b, t) {
				i = b
			}
		}
		s.reps[i].outstanding.Add(1)
		s.reps[i].unanswered.Add(1)
		return i
	}
	var count [4]int
	for i := range n {
		count[s.tier(i, t, used)]++
	}
	best := 0
	for count[best] == 0 {
		best++
	}
	k := count[best]
	if i, ok := s.leastQueued(best, t, used); ok { // the servers' reports, for a copy (load.go)
		s.reps[i].outstanding.Add(1)
		s.reps[i].unanswered.Add(1) // a copy the reports sent counts toward silence as any pick does
		return i
	}
	var i int
	switch s.cfg.Balancer {
	case Random:
		i = s.nth(best, randn(lo, k), t, used)
	case RoundRobin:
		turn := &s.rr
		if len(used) > 0 {
			turn = &s.rrAgain
		}
		start := int(turn.Add(1) % uint64(n))
		i = s.next(best, start, t, used)
	case LeastOutstanding:
		i = s.leastOutstanding(best, t, used, lo)
	default: // P2C
		if k == 1 {
			i = s.next(best, 0, t, used)
			break
		}
		a := randn(lo, k)
		b := randn(hi, k-1)
		if b >= a {
			b++
		}
		ia, ib := s.nth(best, a, t, used), s.nth(best, b, t, used)
		i = ia
		if s.lighter(ia, ib, t) {
			i = ib
		}
	}
	s.reps[i].outstanding.Add(1)
	s.reps[i].unanswered.Add(1)
	return i
}

// leastOutstanding returns the replica of the tier with the fewest attempts outstanding,
// scanning from a random start (bits) so that ties spread.
func (s *Set) leastOutstanding(tier int, t int64, used []int, bits uint32) int {
	n := len(s.reps)
	start := randn(bits, n)
	i := -1
	var least int64
	for j := range n {
		c := (start + j) % n
		if s.tier(c, t, used) != tier {
			continue
		}
		if o := s.reps[c].outstanding.Load(); i < 0 || o < least {
			i, least = c, o
		}
	}
	if i < 0 {
		return start // the tier emptied under a concurrent ejection
	}
	return i
}

// nth returns the m-th replica (from 0) of the tier. Another goroutine may eject a replica
// or let one back between Pick's count and this scan, so the tier can have shrunk: then the
// last replica of the tier seen, or failing that the m-th of all, is as good a choice as the
// moment allows.
func (s *Set) nth(tier, m int, t int64, used []int) int {
	last := -1
	for i := range s.reps {
		if s.tier(i, t, used) == tier {
			if m == 0 {
				return i
			}
			m--
			last = i
		}
	}
	if last >= 0 {
		return last
	}
	return m % len(s.reps)
}

// next returns the first replica of the tier at or after start, wrapping around.
func (s *Set) next(tier, start int, t int64, used []int) int {
	n := len(s.reps)
	for j := range n {
		if c := (start + j) % n; s.tier(c, t, used) == tier {
			return c
		}
	}
	return start
}

// Done ends an attempt that [Set.Pick] sent to replica i, at now, with its result: the
// replica has one attempt fewer outstanding, and the result feeds outlier detection (see
// [Set.Report]). Call it exactly once per Pick. It reports whether the attempt failed at a
// replica that is now ejected (perhaps by this very failure): such a failure is the
// replica's, not the dependency's, and a driver tells the hedging core so with
// hedge.Outcome.Ejected, which keeps it off the circuit breaker.
func (s *Set) Done(now time.Time, i int, r Result) (ejected bool) {
	s.check(i)
	s.reps[i].outstanding.Add(-1)
	s.Report(now, i, r)
	return (r == Failure || r == Unreachable) && s.Ejected(now, i)
}

// Report feeds outlier detection with the result of an attempt on replica i at now, without
// touching the outstanding count: for attempts a driver routed without Pick. A run of
// ConsecutiveFailures Failure results, or of ConsecutiveUnreachable Unreachable ones, ejects
// the replica when the MaxEjectedPercent bound allows (otherwise the next failure tries
// again); so does a run of ConsecutiveSlow Slow results. Results from a replica already ejected (attempts that were under way when it was
// ejected, or sent to it because nothing else was left) are not counted: it is already out.
func (s *Set) Report(now time.Time, i int, r Result) {
	s.check(i)
	rep := &s.reps[i]
	switch r {
	case Ignored:
		return
	case Success:
		s.noteResult(rep, false)
		s.answered(rep)
		s.succeeded(rep, now)
		if rep.trial.Load() && rep.trial.CompareAndSwap(true, false) {
			s.trials.Add(-1)
		}
		if rep.failing.Load() {
			s.mu.Lock()
			rep.failures, rep.unreachable, rep.slow = 0, 0, 0
			rep.failing.Store(false)
			s.mu.Unlock()
		}
		return
	}
	s.noteResult(rep, true)
	if r != Slow {
		s.answered(rep) // a failure is an answer too: the replica is not silent
	}
	if d, ok := s.fail(now, i, r); ok && s.cfg.OnEjection != nil {
		s.cfg.OnEjection(i, now, now.Add(d))
	}
}

// fail counts a failure of replica i and ejects it when due, returning the ejection's length.
func (s *Set) fail(now time.Time, i int, r Result) (time.Duration, bool) {
	rep := &s.reps[i]
	t := s.ticks(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastBad = max(s.lastBad, t)
	if s.inForce(rep.until.Load(), t) {
		return 0, false
	}
	rep.failing.Store(true)
	var due bool
	switch r {
	case Unreachable:
		rep.unreachable++
		due = s.cfg.ConsecutiveUnreachable > 0 && int(rep.unreachable) >= s.cfg.ConsecutiveUnreachable
	case Slow:
		if rep.slow == 0 {
			rep.slowSince = t
		}
		rep.slow++
		due = s.cfg.ConsecutiveSlow > 0 && int(rep.slow) >= s.cfg.ConsecutiveSlow && elapsed(t, rep.slowSince) >= max(int64(s.cfg.SlowFor), 0)
	default:
		rep.failures++
		due = s.cfg.ConsecutiveFailures > 0 && int(rep.failures) >= s.cfg.ConsecutiveFailures
	}
	if !due || s.ejectedAt(t) >= s.maxEj {
		return 0, false
	}
	if r == Slow && !s.slowIsOwn(i, t) {
		// Latency-induced probation only for trouble that is this replica's own: when the
		// others lose races too, the fleet is loaded, and ejecting one would move its work
		// onto replicas that cannot spare the capacity. The run stays counted: the next Slow
		// result asks again.
		return 0, false
	}
	// Forget one ejection per BaseEjection spent in service since the last one ended.
	base := int64(s.cfg.BaseEjection)
	if last := rep.until.Load(); last != never && rep.ejections > 0 && t > last {
		// In 64 bits, and saturating: on a 32-bit platform the quotient may not fit an int.
		rep.ejections = int(max(int64(rep.ejections)-elapsed(t, last)/base, 0))
	}
	rep.ejections++
	d := timesAtMost(rep.ejections, s.cfg.BaseEjection, s.cfg.MaxEjection)
	if r == Slow {
		d = timesAtMost(rep.ejections, slowEjection(s.cfg), d)
	}
	until := t + int64(d)
	if t > 0 && int64(d) > math.MaxInt64-t {
		// An ejection "for ever" (BaseEjection of MaxInt64) stays one. Only a positive t can
		// overflow: for a result stamped before the anchor (t < 0) MaxInt64-t itself would,
		// and a 30 s ejection would last for ever.
		until = math.MaxInt64
	}
	rep.until.Store(until)
	s.noteEnd(until)
	if !rep.trial.Swap(true) {
		s.trials.Add(1)
	}
	rep.failures, rep.unreachable, rep.slow = 0, 0, 0
	rep.failing.Store(false)
	s.ejected.Add(1)
	return d, true
}

// seen is the latest tick of a result the Set has been given, Success or not (never when
// none), which s.mu must guard: the time of a change for Pool.With, which is given none. A
// Set reads no clock, and a pick does not note its time (every core would write the same
// word); every ejection was made by a result, and a Set in use is given results all the time.
func (s *Set) seen() int64 {
	t := s.lastBad
	for i := range s.reps {
		t = max(t, s.reps[i].lastAnswer.Load())
	}
	return t
}

// slowEjection is how long a replica's first ejection for Slow results lasts: four times
// SlowFor (2 s by default), not BaseEjection. A replica that loses every race may have
// stopped answering, or may only be behind a queue that a random balancer let build up and
// that drains within a second or two; keeping such a replica out for BaseEjection moves its
// share of the load onto the others for half a minute, more than a loaded fleet can carry.
// One that has stopped answering is found again within SlowFor of coming back, and ejected
// for longer each time.
func slowEjection(c Config) time.Duration {
	return timesAtMost(4, max(c.SlowFor, 250*time.Millisecond), math.MaxInt64)
}

// timesAtMost is min(n × d, limit) for n ≥ 0 and d ≥ 0, without the overflow of n × d: an
// ejection of very long durations must not wrap round to one in the past.
func timesAtMost(n int, d, limit time.Duration) time.Duration {
	if n > 0 && d > limit/time.Duration(n) {
		return limit
	}
	return min(time.Duration(n)*d, limit)
}

// noteEnd raises lastEnd to end.
func (s *Set) noteEnd(end int64) {
	for {
		cur := s.lastEnd.Load()
		if cur >= end || s.lastEnd.CompareAndSwap(cur, end) {
			return
		}
	}
}

// inForce reports whether an ejection that ends at tick until is in force at tick t: it ends
// after t, and no later than one made at t could (MaxEjection after it). One that ends later
// was made at a time ahead of t, by results stamped ahead or a clock since stepped back: held,
// it would keep its replica out for the length of the step, past MaxEjection, and, as each
// ejection was allowed at its own time, more than MaxEjectedPercent of the replicas (every
// one) could be out at once.
func (s *Set) inForce(until, t int64) bool {
	return until > t && elapsed(until, t) <= int64(s.cfg.MaxEjection)
}

// ejectedAt counts the replicas ejected at tick t.
func (s *Set) ejectedAt(t int64) int {
	n := 0
	for i := range s.reps {
		if s.inForce(s.reps[i].until.Load(), t) {
			n++
		}
	}
	return n
}

// Ejected reports whether replica i is ejected at now.
func (s *Set) Ejected(now time.Time, i int) bool {
	s.check(i)
	return s.inForce(s.reps[i].until.Load(), s.ticks(now))
}

// Healthy counts the replicas not ejected at now.
func (s *Set) Healthy(now time.Time) int {
	return len(s.reps) - s.ejectedAt(s.ticks(now))
}

// Outstanding is the number of attempts picked for replica i and not yet Done.
func (s *Set) Outstanding(i int) int {
	s.check(i)
	return int(s.reps[i].outstanding.Load())
}

// Stats is a snapshot of one replica.
type Stats struct {
	Outstanding int       // attempts picked and not yet done
	Ejected     bool      // not picked while a replica that is not ejected remains
	Until       time.Time // when the ejection ends (zero when not ejected)
	Ejections   int       // the ejections it is remembered for: the next lasts one more BaseEjection
	Trial       bool      // back from an ejection (or still in it) with no Success since: one attempt at a time
}

// Stats returns a snapshot of replica i at now.
func (s *Set) Stats(now time.Time, i int) Stats {
	s.check(i)
	t := s.ticks(now)
	rep := &s.reps[i]
	st := Stats{Outstanding: int(rep.outstanding.Load()), Trial: rep.trial.Load()}
	if u := rep.until.Load(); s.inForce(u, t) {
		st.Ejected = true
		st.Until = now.Add(time.Duration(elapsed(u, t)))
	}
	s.mu.Lock()
	st.Ejections = rep.ejections
	s.mu.Unlock()
	return st
}

// Ejections is how many ejections the Set has made since it was built.
func (s *Set) Ejections() int64 { return s.ejected.Load() }
