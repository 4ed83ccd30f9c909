package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// plainClient sends each call once and finishes when it answers: the engine alone, with no
// policy, to check the queue against theory independently of the core.
type plainClient struct{}

func (plainClient) arrive(s *sim, sl int32)                    { s.startAttempt(sl, 0) }
func (plainClient) started(s *sim, sl int32, k int)            {}
func (plainClient) done(s *sim, sl int32, k int)               { s.finish(sl, nil) }
func (plainClient) timer(s *sim, sl int32)                     {}
func (plainClient) refused(s *sim, sl int32, k int)            {}
func (plainClient) load(s *sim, c int32, rp int, l hedge.Load) {}
func (plainClient) deadline(s *sim, sl int32)                  {}

func runPlain(workers int, d Distribution, calls int, load float64, seed uint64) Point {
	s := newSim()
	s.reset(runParams{
		workers: workers, dist: d, calls: calls, warm: calls / 10,
		maxQueue: workers * 2000, maxEvents: int64(calls)*64 + 1e6,
		lambda: load * float64(workers) / d.Mean().Seconds(), seed: seed,
	}, plainClient{})
	s.run(nil)
	var p Point
	s.measure(&p)
	return p
}

// replicate runs f for seeds 1..n in parallel and returns the results in seed order.
func replicate(n int, f func(seed uint64) Point) []Point {
	ps := make([]Point, n)
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() { ps[i] = f(uint64(i + 1)) })
	}
	wg.Wait()
	return ps
}

// scaled is n calls, or a tenth of them under the race detector.
func scaled(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}

// erlangCWait is the mean time a customer waits in the queue of an M/M/c queue with arrival
// rate lambda and service rate mu per server: C(c, a)/(cμ-λ), where a = λ/μ and C(c, a), the
// probability that an arrival waits, is Erlang's C formula:
//
//	C(c, a) = (a^c/c! · 1/(1-ρ)) / (Σ_{k<c} a^k/k! + a^c/c! · 1/(1-ρ)),  ρ = a/c.
func erlangCWait(c int, lambda, mu float64) float64 {
	a := lambda / mu
	rho := a / float64(c)
	term, sum := 1.0, 0.0 // term = a^k/k!
	for k := 0; k < c; k++ {
		sum += term
		term *= a / float64(k+1)
	}
	top := term / (1 - rho)
	return top / (sum + top) / (float64(c)*mu - lambda)
}

func TestErlangCFormula(t *testing.T) {
	// M/M/1: Wq = ρ/(μ-λ). M/M/2 with a = 1 (ρ = 0.5): C = 1/3, Wq = C/(2μ-λ).
	if got, want := erlangCWait(1, 0.5, 1), 0.5/(1-0.5); math.Abs(got-want) > 1e-12 {
		t.Errorf("M/M/1: %v, want %v", got, want)
	}
	if got, want := erlangCWait(2, 1, 1), (1.0/3)/(2-1); math.Abs(got-want) > 1e-12 {
		t.Errorf("M/M/2: %v, want %v", got, want)
	}
}

// TestErlangC: with exponential service and no hedging the model is an M/M/c queue, so the mean
// time an attempt waits in the queue must match Erlang C.
func TestErlangC(t *testing.T) {
	const workers = 4
	mean := 10 * time.Millisecond
	tol := 0.03
	if raceEnabled {
		tol = 0.10
	}
	for _, tc := range []struct {
		rho   float64
		calls int // per replication; 4 replications
	}{{0.7, 320_000}, {0.9, 800_000}} {
		ps := replicate(4, func(seed uint64) Point {
			return runPlain(workers, Exponential{MeanTime: mean}, scaled(tc.calls), tc.rho, seed)
		})
		var got float64
		for _, p := range ps {
			got += p.MeanWaitMs / float64(len(ps))
		}
		mu := 1 / mean.Seconds()
		want := erlangCWait(workers, tc.rho*workers*mu, mu) * 1e3
		rel := math.Abs(got-want) / want
		if rel > tol {
			t.Errorf("ρ=%v: mean wait %.4f ms, Erlang C %.4f ms: %.1f%% off, more than %.0f%%", tc.rho, got, want, 100*rel, 100*tol)
		}
		t.Logf("ρ=%v: mean wait %.4f ms, Erlang C %.4f ms (%.2f%% off)", tc.rho, got, want, 100*rel)
	}
}

// TestUtilisation: without hedging the workers are busy ρ of the time.
func TestUtilisation(t *testing.T) {
	for _, rho := range []float64{0.3, 0.7, 0.95} {
		p := runPlain(16, ReferenceMixture(), scaled(200_000), rho, 1)
		got := p.UtilisationPct / 100
		tol := 0.01
		if raceEnabled {
			tol = 0.03
		}
		if rel := math.Abs(got-rho) / rho; rel > tol {
			t.Errorf("ρ=%v: utilisation %.4f, %.2f%% off", rho, got, 100*rel)
		}
	}
}

// cdf is the CDF of the distributions the test uses, at x.
func cdf(t *testing.T, d Distribution, x time.Duration) float64 {
	switch d := d.(type) {
	case LogNormal:
		if x <= 0 {
			return 0
		}
		z := math.Log(float64(x)/float64(d.Median)) / d.Sigma
		return 0.5 * (1 + math.Erf(z/math.Sqrt2))
	case Uniform:
		return math.Min(1, math.Max(0, float64(x-d.Min)/float64(d.Max-d.Min)))
	case Mixture:
		var total, sum float64
		for _, c := range d.Components {
			total += c.Weight
			sum += c.Weight * cdf(t, c.Dist, x)
		}
		return sum / total
	}
	t.Fatalf("no CDF for %T", d)
	return 0
}

// quantile inverts cdf by bisection.
func quantile(t *testing.T, d Distribution, q float64) time.Duration {
	lo, hi := time.Duration(0), time.Hour
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if cdf(t, d, mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestLowLoadTail: at 30% load a call almost never waits, so without hedging the tail of call
// latency is the service-time mixture's own tail.
func TestLowLoadTail(t *testing.T) {
	m := ReferenceMixture()
	p := runPlain(16, m, scaled(400_000), 0.3, 1)
	tol := 0.03
	if raceEnabled {
		tol = 0.08
	}
	for _, c := range []struct {
		q   float64
		got float64
	}{{0.99, p.P99Ms}, {0.999, p.P999Ms}} {
		want := float64(quantile(t, m, c.q)) / 1e6
		if rel := math.Abs(c.got-want) / want; rel > tol {
			t.Errorf("p%v: %.2f ms, mixture's own %.2f ms: %.1f%% off", 100*c.q, c.got, want, 100*rel)
		}
	}
}

func TestDistributionMeans(t *testing.T) {
	m := ReferenceMixture()
	// 0.98 · 10ms · e^(0.25²/2) + 0.02 · 200ms
	want := 0.98*10e6*math.Exp(0.25*0.25/2) + 0.02*200e6
	if got := float64(m.Mean()); math.Abs(got-want) > 1 {
		t.Errorf("mixture mean %v ns, want %v", got, want)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []Distribution{m, Exponential{MeanTime: 7 * time.Millisecond}, Empirical{Samples: []time.Duration{1, 2, 3, 10}}} {
		var sum float64
		const n = 400_000
		for range n {
			sum += float64(d.Sample(r))
		}
		if rel := math.Abs(sum/n-float64(d.Mean())) / float64(d.Mean()); rel > 0.01 {
			t.Errorf("%v: sample mean %v, Mean() %v", d, time.Duration(sum/n), d.Mean())
		}
	}
	if got := (Empirical{Samples: []time.Duration{1, 2, 3, 10}}).Mean(); got != 4 {
		t.Errorf("empirical mean %v, want 4ns", got)
	}
}

func TestValidateDistribution(t *testing.T) {
	bad := []Distribution{
		nil,
		Empirical{},
		Empirical{Samples: []time.Duration{-1}},
		Exponential{},
		Mixture{},
		Mixture{Components: []Component{{Weight: -1, Dist: Exponential{MeanTime: 1}}}},
		LogNormal{Median: 0, Sigma: 1},
		Uniform{Min: 3, Max: 2},
		Uniform{},
		Mixture{Components: []Component{{Weight: 1, Dist: Uniform{}}, {Weight: 1, Dist: Uniform{Min: 3, Max: 2}}}},
	}
	for _, d := range bad {
		if validateDistribution(d) == nil {
			t.Errorf("%#v: no error", d)
		}
	}
	if err := validateDistribution(ReferenceMixture()); err != nil {
		t.Error(err)
	}
	// Requests answered at once beside a few that stall: a component may take no time.
	if err := validateDistribution(Mixture{Components: []Component{{Weight: 0.98, Dist: Uniform{}}, {Weight: 0.02, Dist: Uniform{Min: time.Millisecond, Max: time.Millisecond}}}}); err != nil {
		t.Error(err)
	}
}

func TestHeapOrder(t *testing.T) {
	var h eventHeap
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		h.push(event{t: r.Int64N(50), idx: int32(i)})
	}
	prev := event{t: -1}
	for h.len() > 0 {
		e := h.pop()
		if e.t < prev.t || (e.t == prev.t && e.seq < prev.seq) {
			t.Fatalf("popped %+v after %+v", e, prev)
		}
		prev = e
	}
}

func TestRingFIFO(t *testing.T) {
	var q ring
	next, want := int32(0), int32(0)
	for round := range 2000 {
		for range round % 7 {
			q.push(next)
			next++
		}
		for range round % 5 {
			v, ok := q.pop()
			if !ok {
				break
			}
			if v != want {
				t.Fatalf("popped %d, want %d", v, want)
			}
			want++
		}
	}
	if q.size != int(next-want) {
		t.Fatalf("size %d, want %d", q.size, next-want)
	}
}

// TestServiceTimeIsTheRunsDraw: ServiceTime draws what a run with the same seed serves each
// request for. With a worker for every call there is no queue, so each call's latency is its
// first attempt's service time, and the run's percentiles are those of ServiceTime's draws
// over its measured calls.
func TestServiceTimeIsTheRunsDraw(t *testing.T) {
	d := Exponential{MeanTime: time.Millisecond}
	const calls, seed = 5000, 7
	p, err := Run(Params{Workers: 1000, Service: d, Calls: calls, WarmupFraction: 0.1}, Setup{Name: SetupNoHedge}, 10, Ignored, seed)
	if err != nil {
		t.Fatal(err)
	}
	var draws []int64
	for i := calls / 10; i < calls; i++ {
		draws = append(draws, int64(ServiceTime(d, seed, i, 0)))
	}
	slices.Sort(draws)
	for _, c := range []struct {
		q   float64
		got float64
	}{{0.5, p.P50Ms}, {0.99, p.P99Ms}, {0.999, p.P999Ms}} {
		if want := quantileMs(draws, 0, c.q); c.got != want {
			t.Errorf("p%g of the run %v ms, of ServiceTime's draws %v ms", 100*c.q, c.got, want)
		}
	}
	if ServiceTime(d, seed, 10, 1) == ServiceTime(d, seed, 10, 0) || ServiceTime(d, seed+1, 10, 0) == ServiceTime(d, seed, 10, 0) {
		t.Error("ServiceTime draws the same for another attempt or another seed")
	}
}
