package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Distribution is a service-time distribution: how long one request keeps a worker busy.
//
// Sample must not allocate and must draw only from r: the simulator reseeds r for every request
// (from the seed, the call and the attempt), which is what makes a run independent of the order
// in which events happen and gives every setup the same service times for the same requests.
// Mean is used for the arrival rate, so it must be exact (analytic where there is a formula).
type Distribution interface {
	Sample(r *rand.Rand) time.Duration
	Mean() time.Duration
	String() string
}

// LogNormal is a log-normal distribution given by its median (e^μ) and the standard deviation
// Sigma of the underlying normal. The zero value is a point mass at 0; build it with the fields.
type LogNormal struct {
	Median time.Duration
	Sigma  float64
}

// Sample draws Median·e^(Sigma·N(0,1)).
func (d LogNormal) Sample(r *rand.Rand) time.Duration {
	return durationOf(float64(d.Median) * math.Exp(d.Sigma*r.NormFloat64()))
}

// durationOf converts x ns to a Duration, saturating: a draw past the largest Duration is the
// largest, not a negative one (which the simulator would then serve in no time at all).
func durationOf(x float64) time.Duration {
	if x >= 1<<63 {
		return math.MaxInt64
	}
	return time.Duration(x)
}

// Mean is Median·e^(Sigma²/2).
func (d LogNormal) Mean() time.Duration {
	return time.Duration(math.Round(float64(d.Median) * math.Exp(d.Sigma*d.Sigma/2)))
}

func (d LogNormal) String() string {
	return fmt.Sprintf("lognormal(median %v, sigma %g)", d.Median, d.Sigma)
}

// Uniform is the uniform distribution on [Min, Max].
type Uniform struct {
	Min, Max time.Duration
}

// Sample draws uniformly from [Min, Max].
func (d Uniform) Sample(r *rand.Rand) time.Duration {
	return d.Min + min(durationOf(r.Float64()*float64(d.Max-d.Min)), d.Max-d.Min)
}

// Mean is (Min+Max)/2.
func (d Uniform) Mean() time.Duration { return (d.Min + d.Max) / 2 }

func (d Uniform) String() string { return fmt.Sprintf("uniform[%v,%v]", d.Min, d.Max) }

// Exponential is the exponential distribution with the given mean: with it and no hedging the
// model is an M/M/c queue, which is how the simulator is checked against Erlang C.
type Exponential struct {
	MeanTime time.Duration
}

// Sample draws an exponential variate with mean MeanTime.
func (d Exponential) Sample(r *rand.Rand) time.Duration {
	return durationOf(r.ExpFloat64() * float64(d.MeanTime))
}

// Mean is MeanTime.
func (d Exponential) Mean() time.Duration { return d.MeanTime }

func (d Exponential) String() string { return fmt.Sprintf("exponential(mean %v)", d.MeanTime) }

// Empirical draws uniformly from user-supplied samples (for example latencies measured on a real
// service), so a user can put their own service into the model. It must hold at least one sample:
// a run refuses an empty one with an error, and Sample panics on it.
type Empirical struct {
	Samples []time.Duration
}

// Sample returns one of the samples, each with equal probability. It panics with a sim:
// message when there is none.
func (d Empirical) Sample(r *rand.Rand) time.Duration {
	if len(d.Samples) == 0 {
		panic(errEmptyEmpirical.Error())
	}
	return d.Samples[r.IntN(len(d.Samples))]
}

// The rules an empty distribution breaks: what a run returns (validateShape), and what
// Sample, which has no error to return, panics with.
var (
	errEmptyEmpirical = errors.New("sim: Empirical.Samples must not be empty")
	errEmptyMixture   = errors.New("sim: Mixture.Components must not be empty")
	errEmptySeries    = errors.New("sim: Series.Samples must not be empty")
	errNilService     = errors.New("sim: service distribution is nil")
)

// Mean is the mean of the samples.
func (d Empirical) Mean() time.Duration {
	if len(d.Samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range d.Samples {
		sum += float64(s)
	}
	return time.Duration(math.Round(sum / float64(len(d.Samples))))
}

func (d Empirical) String() string { return fmt.Sprintf("empirical(%d samples)", len(d.Samples)) }

// Component is one part of a Mixture: with probability Weight/Σweights a request draws from Dist.
type Component struct {
	Weight float64
	Dist   Distribution
}

// Mixture draws from one of its components, chosen at random by weight. Weights need not sum to
// 1; they are normalised. It must have at least one component: a run refuses an empty one
// with an error, and Sample panics on it.
type Mixture struct {
	Components []Component
}

// Sample chooses a component by weight and draws from it. It panics with a sim: message when
// there is no component.
func (m Mixture) Sample(r *rand.Rand) time.Duration {
	if len(m.Components) == 0 {
		panic(errEmptyMixture.Error())
	}
	var total float64
	for _, c := range m.Components {
		total += c.Weight
	}
	u := r.Float64() * total
	last := len(m.Components) - 1 // the last component with any weight
	for i, c := range m.Components {
		if u < c.Weight {
			return c.Dist.Sample(r)
		}
		u -= c.Weight
		if c.Weight > 0 {
			last = i
		}
	}
	// Rounding left u at or past the last weight: the draw is the last component that can be
	// drawn at all, never one of weight 0.
	return m.Components[last].Dist.Sample(r)
}

// Mean is the weighted mean of the components' means.
func (m Mixture) Mean() time.Duration {
	var total, sum float64
	for _, c := range m.Components {
		total += c.Weight
		sum += c.Weight * float64(c.Dist.Mean())
	}
	if total == 0 {
		return 0
	}
	return time.Duration(math.Round(sum / total))
}

func (m Mixture) String() string {
	var b strings.Builder
	b.WriteString("mixture: ")
	for i, c := range m.Components {
		if i > 0 {
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "%g %v", c.Weight, c.Dist)
	}
	return b.String()
}

// ReferenceMixture is the reference model's service time (SIMULATION.md): with probability 0.98
// log-normal with median 10 ms and σ = 0.25, with probability 0.02 uniform on [100 ms, 300 ms]
// (a "hiccup": the slowness a hedge is meant to beat). Its mean is about 14.11 ms.
func ReferenceMixture() Mixture {
	return Mixture{Components: []Component{
		{Weight: 0.98, Dist: LogNormal{Median: 10 * time.Millisecond, Sigma: 0.25}},
		{Weight: 0.02, Dist: Uniform{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}},
	}}
}

// validateDistribution reports why d cannot drive a simulation, or nil.
func validateDistribution(d Distribution) error {
	if err := validateShape(d); err != nil {
		return err
	}
	if d.Mean() <= 0 {
		return fmt.Errorf("sim: service distribution %v must have a mean > 0", d)
	}
	return nil
}

// validateShape reports why d, or a component of it, is no distribution of service times, or
// nil. A component may take no time at all (requests answered at once, beside a few that
// stall); the whole distribution must take some (validateDistribution).
func validateShape(d Distribution) error {
	switch d := d.(type) {
	case nil:
		return errNilService
	case Empirical:
		if len(d.Samples) == 0 {
			return errEmptyEmpirical
		}
		for i, s := range d.Samples {
			if s < 0 {
				return fmt.Errorf("sim: Empirical.Samples[%d] must be >= 0, got %v", i, s)
			}
		}
	case Mixture:
		if len(d.Components) == 0 {
			return errEmptyMixture
		}
		var total float64
		for i, c := range d.Components {
			if !(c.Weight >= 0) || math.IsInf(c.Weight, 0) {
				return fmt.Errorf("sim: Mixture.Components[%d].Weight must be finite and >= 0, got %g", i, c.Weight)
			}
			if err := validateShape(c.Dist); err != nil {
				return err
			}
			total += c.Weight
		}
		if total <= 0 {
			return errors.New("sim: Mixture weights must sum to more than 0")
		}
	case LogNormal:
		if d.Median <= 0 || !(d.Sigma >= 0) || math.IsInf(d.Sigma, 0) {
			return fmt.Errorf("sim: LogNormal needs Median > 0 and a finite Sigma >= 0, got %v, %g", d.Median, d.Sigma)
		}
	case Uniform:
		if d.Min < 0 || d.Max < d.Min {
			return fmt.Errorf("sim: Uniform needs 0 <= Min <= Max, got [%v, %v]", d.Min, d.Max)
		}
	case Exponential:
		if d.MeanTime <= 0 {
			return fmt.Errorf("sim: Exponential.MeanTime must be > 0, got %v", d.MeanTime)
		}
	case Pareto:
		if d.Min <= 0 || !(d.Alpha > 0) || math.IsInf(d.Alpha, 0) || d.Max < d.Min {
			return fmt.Errorf("sim: Pareto needs Min > 0, a finite Alpha > 0 and Max >= Min, got %v", d)
		}
	}
	return nil
}
