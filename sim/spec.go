package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file holds the text forms of the model's parameters: the lists of seeds, loads and
// setups a sweep runs, and the service-time grammar. The commands that run the model (hedgesim,
// hedgeload) read them from their flags; keeping the grammar here means a value one command
// accepts the other accepts too, with the same meaning. The errors name the offending value and
// the rule it breaks, not a flag: each command prefixes its own flag name and decides how a bad
// value ends the program.

// ParseSeeds parses a comma-separated list of seeds (whole numbers >= 0), in the order given.
// Blank entries are skipped; a seed listed twice is an error (it would run the same point twice),
// and so is a list with no seed.
func ParseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed (a whole number >= 0)", f)
		}
		if slices.Contains(seeds, n) {
			return nil, fmt.Errorf("seed %d is listed twice", n)
		}
		seeds = append(seeds, n)
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("must list at least one seed, got %q", s)
	}
	return seeds, nil
}

// ParseLoads parses a comma-separated list of loads, each a percentage of the workers' capacity
// without hedges in (0, 100), with or without a trailing '%', in the order given. Blank entries
// are skipped; a load listed twice is an error, and so is a list with no load.
func ParseLoads(s string) ([]float64, error) {
	var loads []float64
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "%")); f == "" {
			continue
		}
		l, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		if l <= 0 || l >= 100 {
			return nil, fmt.Errorf("each load is a %% of worker capacity in (0, 100), got %v", l)
		}
		if slices.Contains(loads, l) {
			return nil, fmt.Errorf("load %v is listed twice", l)
		}
		loads = append(loads, l)
	}
	if len(loads) == 0 {
		return nil, fmt.Errorf("must list at least one load, got %q", s)
	}
	return loads, nil
}

// ParseSetups resolves a ';'-separated list of setup names against names (the setups known, in
// their reference order; the names of Setups), ignoring case and spaces, so that
// "hedge, budget 5 %" and "Hedge, budget 5%" are the same setup. It returns the canonical names
// in the order asked; "all" is every name. An unknown name lists the known ones.
func ParseSetups(s string, names []string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		if len(names) == 0 {
			return nil, fmt.Errorf("no setup is known, so %q names none", s)
		}
		return slices.Clone(names), nil
	}
	key := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }
	var out []string
	for f := range strings.SplitSeq(s, ";") {
		if f = strings.Join(strings.Fields(f), " "); f == "" {
			continue
		}
		i := slices.IndexFunc(names, func(n string) bool { return key(n) == key(f) })
		if i < 0 {
			return nil, fmt.Errorf("unknown setup %q; the setups are:\n  %s\n(separate names with ';', or use all)",
				f, strings.Join(names, "\n  "))
		}
		if slices.Contains(out, names[i]) {
			return nil, fmt.Errorf("setup %q is listed twice", names[i])
		}
		out = append(out, names[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("must name at least one setup, or all; got %q", s)
	}
	return out, nil
}

// The kinds of service time ParseService knows (ServiceSpec.Kind).
const (
	ServiceMixture     = "mixture"     // the reference model's mixture (ReferenceMixture)
	ServiceExponential = "exponential" // exponential:MEAN
	ServiceEmpirical   = "empirical"   // empirical:FILE, service times drawn from a file
)

// ServiceSpec is a parsed service-time value: what was asked for, kept beside the distribution
// so that a report can say where the service times came from (e.g. the file's name).
type ServiceSpec struct {
	Kind    string          // ServiceMixture, ServiceExponential or ServiceEmpirical
	Mean    time.Duration   // ServiceExponential: the mean, > 0
	File    string          // ServiceEmpirical: the file the samples were read from
	Samples []time.Duration // ServiceEmpirical: the service times, each >= 0, not all 0
}

// Distribution is the service-time distribution the spec describes.
func (s ServiceSpec) Distribution() Distribution {
	switch s.Kind {
	case ServiceExponential:
		return Exponential{MeanTime: s.Mean}
	case ServiceEmpirical:
		return Empirical{Samples: s.Samples}
	}
	return ReferenceMixture()
}

// ParseService parses a service-time value:
//
//	mixture          the reference model's mixture
//	exponential:MEAN exponential service times of mean MEAN (a Go duration > 0, e.g. 10ms)
//	empirical:FILE   service times drawn from FILE, read with ReadDurations
//
// The kind is matched ignoring case. For empirical:FILE it reads the file.
func ParseService(s string) (ServiceSpec, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch strings.ToLower(kind) {
	case ServiceMixture:
		if hasArg {
			return ServiceSpec{}, fmt.Errorf("mixture takes no argument, got %q", s)
		}
		return ServiceSpec{Kind: ServiceMixture}, nil
	case ServiceExponential:
		d, err := time.ParseDuration(strings.TrimSpace(arg))
		if !hasArg || err != nil || d <= 0 {
			return ServiceSpec{}, fmt.Errorf("exponential:MEAN needs a mean duration > 0, e.g. exponential:10ms; got %q", s)
		}
		return ServiceSpec{Kind: ServiceExponential, Mean: d}, nil
	case ServiceEmpirical:
		if !hasArg || arg == "" {
			return ServiceSpec{}, fmt.Errorf("empirical:FILE needs a file of durations, one per line; got %q", s)
		}
		f, err := os.Open(arg)
		if err != nil {
			return ServiceSpec{}, fmt.Errorf("empirical: %w", err)
		}
		defer f.Close()
		ds, err := ReadDurations(f, arg)
		if err != nil {
			return ServiceSpec{}, fmt.Errorf("empirical: %w", err)
		}
		return ServiceSpec{Kind: ServiceEmpirical, File: arg, Samples: ds}, nil
	}
	return ServiceSpec{}, fmt.Errorf("must be mixture, exponential:MEAN or empirical:FILE, got %q", s)
}

// maxBareMillis bounds a bare number of milliseconds in ReadDurations, so that its conversion
// to a time.Duration cannot overflow (1e12 ms is about 32 years).
const maxBareMillis = 1e12

// ReadDurations reads service times, one per line: a Go duration ("12ms", "1.5s") or a bare
// number of milliseconds ("7", "3.5"). Blank lines and text after '#' are ignored. Each time
// must be >= 0, and at least one must be above 0 (all-zero service times make no load). name
// is what the errors call the input (a file name); they give the line number after it.
func ReadDurations(r io.Reader, name string) ([]time.Duration, error) {
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
			if err2 != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > maxBareMillis {
				return nil, fmt.Errorf("%s:%d: %q is not a duration (e.g. 12ms) or a number of ms", name, line, t)
			}
			d = time.Duration(math.Round(ms * float64(time.Millisecond))) // 1.001 is a shade under 1,001,000 ns
		}
		if d < 0 {
			return nil, fmt.Errorf("%s:%d: a service time must be >= 0, got %v", name, line, d)
		}
		ds = append(ds, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(ds) == 0 {
		return nil, fmt.Errorf("%s holds no service time", name)
	}
	if !slices.ContainsFunc(ds, func(d time.Duration) bool { return d > 0 }) {
		return nil, fmt.Errorf("%s: the service times must not all be 0", name)
	}
	return ds, nil
}

// SetupNames are the names of every setup Setups returns, in report order: the names
// ParseSetups resolves against in the commands that run the simulator's setups.
func SetupNames() []string {
	var names []string
	for _, s := range Setups(0) {
		names = append(names, s.Name)
	}
	return names
}
