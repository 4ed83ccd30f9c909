package sim

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint64
		err  string // in the error; "" = no error
	}{
		{"1,2", []uint64{1, 2}, ""},
		{" 2 , 1 ,, ", []uint64{2, 1}, ""},
		{"0", []uint64{0}, ""},
		{"18446744073709551615", []uint64{18446744073709551615}, ""},
		{"", nil, `must list at least one seed, got ""`},
		{" , ", nil, `must list at least one seed, got " , "`},
		{"1,-2", nil, `"-2" is not a seed (a whole number >= 0)`},
		{"1.5", nil, `"1.5" is not a seed`},
		{"18446744073709551616", nil, "is not a seed"},
		{"3,1,3", nil, "seed 3 is listed twice"},
	} {
		got, err := ParseSeeds(c.in)
		checkParse(t, "ParseSeeds", c.in, got, err, c.want, c.err)
	}
}

func TestParseLoads(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
		err  string
	}{
		{"30,50,70", []float64{30, 50, 70}, ""},
		{"95, 30% ,62.5 %", []float64{95, 30, 62.5}, ""},
		{"0.001,99.999", []float64{0.001, 99.999}, ""},
		{",", nil, `must list at least one load, got ","`},
		{"0", nil, "in (0, 100), got 0"},
		{"100", nil, "in (0, 100), got 100"},
		{"-5", nil, "in (0, 100), got -5"},
		{"NaN", nil, `"NaN" is not a number`},
		{"Inf", nil, `"Inf" is not a number`},
		{"fifty", nil, `"fifty" is not a number`},
		{"50,50%", nil, "load 50 is listed twice"},
	} {
		got, err := ParseLoads(c.in)
		checkParse(t, "ParseLoads", c.in, got, err, c.want, c.err)
	}
}

func TestParseSetups(t *testing.T) {
	names := []string{"no hedge", "hedge, budget 5 %", "recommended"}
	for _, c := range []struct {
		in    string
		names []string
		want  []string
		err   string
	}{
		{"all", names, names, ""},
		{" ALL ", names, names, ""},
		{"Recommended ; no  hedge", names, []string{"recommended", "no hedge"}, ""},
		{"hedge, budget 5%", names, []string{"hedge, budget 5 %"}, ""},
		{"no hedge;;", names, []string{"no hedge"}, ""},
		{";", names, nil, `must name at least one setup, or all; got ";"`},
		{"no hedge;turbo", names, nil, `unknown setup "turbo"; the setups are:` + "\n  no hedge\n  hedge, budget 5 %\n  recommended\n"},
		{"no hedge; No Hedge", names, nil, `setup "no hedge" is listed twice`},
		{"all", nil, nil, "no setup is known"},
	} {
		got, err := ParseSetups(c.in, c.names)
		checkParse(t, "ParseSetups", c.in, got, err, c.want, c.err)
	}
	// "all" returns a copy: changing it must not change the caller's names.
	got, _ := ParseSetups("all", names)
	got[0] = "changed"
	if names[0] != "no hedge" {
		t.Errorf(`ParseSetups("all") returned the caller's slice`)
	}
}

// TestSetupNamesFunc: the names ParseSetups resolves against are every setup's, in report order.
func TestSetupNamesFunc(t *testing.T) {
	names := SetupNames()
	setups := Setups(0)
	if len(names) != len(setups) {
		t.Fatalf("SetupNames() = %q, want the %d setups' names", names, len(setups))
	}
	for i, s := range setups {
		if names[i] != s.Name {
			t.Errorf("SetupNames()[%d] = %q, want %q", i, names[i], s.Name)
		}
	}
}

func TestParseService(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "lat.txt")
	if err := os.WriteFile(good, []byte("# measured\n12ms\n\n 3.5ms # fast\n1.5s\n7\n0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("12ms\nabc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	samples := []time.Duration{12 * time.Millisecond, 3500 * time.Microsecond, 1500 * time.Millisecond, 7 * time.Millisecond, 0}
	for _, c := range []struct {
		in   string
		want ServiceSpec
		err  string
	}{
		{"mixture", ServiceSpec{Kind: ServiceMixture}, ""},
		{" Mixture ", ServiceSpec{Kind: ServiceMixture}, ""},
		{"exponential:10ms", ServiceSpec{Kind: ServiceExponential, Mean: 10 * time.Millisecond}, ""},
		{"EXPONENTIAL: 1.5s", ServiceSpec{Kind: ServiceExponential, Mean: 1500 * time.Millisecond}, ""},
		{"empirical:" + good, ServiceSpec{Kind: ServiceEmpirical, File: good, Samples: samples}, ""},
		{"gamma", ServiceSpec{}, `must be mixture, exponential:MEAN or empirical:FILE, got "gamma"`},
		{"", ServiceSpec{}, `must be mixture, exponential:MEAN or empirical:FILE, got ""`},
		{"mixture:2", ServiceSpec{}, `mixture takes no argument, got "mixture:2"`},
		{"exponential", ServiceSpec{}, `exponential:MEAN needs a mean duration > 0, e.g. exponential:10ms; got "exponential"`},
		{"exponential:0s", ServiceSpec{}, "exponential:MEAN needs a mean duration > 0"},
		{"exponential:-1ms", ServiceSpec{}, "exponential:MEAN needs a mean duration > 0"},
		{"exponential:ten", ServiceSpec{}, "exponential:MEAN needs a mean duration > 0"},
		{"empirical:", ServiceSpec{}, `empirical:FILE needs a file of durations, one per line; got "empirical:"`},
		{"empirical:" + bad, ServiceSpec{}, "empirical: " + bad + `:2: "abc" is not a duration (e.g. 12ms) or a number of ms`},
	} {
		got, err := ParseService(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseService(%q) error %v, want it to contain %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.Kind != c.want.Kind || got.Mean != c.want.Mean || got.File != c.want.File || !slices.Equal(got.Samples, c.want.Samples) {
			t.Errorf("ParseService(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	// A file that cannot be opened keeps the cause, for errors.Is.
	_, err := ParseService("empirical:" + filepath.Join(dir, "missing.txt"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "empirical: ") {
		t.Errorf("missing file: error %v, want fs.ErrNotExist prefixed by empirical:", err)
	}
}

func TestServiceSpecDistribution(t *testing.T) {
	if d, ok := (ServiceSpec{Kind: ServiceMixture}).Distribution().(Mixture); !ok || d.Mean() != ReferenceMixture().Mean() {
		t.Errorf("mixture spec = %v, want the reference mixture", d)
	}
	if d := (ServiceSpec{Kind: ServiceExponential, Mean: 10 * time.Millisecond}).Distribution(); d != (Exponential{MeanTime: 10 * time.Millisecond}) {
		t.Errorf("exponential spec = %v", d)
	}
	samples := []time.Duration{time.Millisecond, 3 * time.Millisecond}
	if d, ok := (ServiceSpec{Kind: ServiceEmpirical, Samples: samples}).Distribution().(Empirical); !ok || !slices.Equal(d.Samples, samples) {
		t.Errorf("empirical spec = %v", d)
	}
}

func TestReadDurations(t *testing.T) {
	for _, c := range []struct {
		text string
		want []time.Duration
		err  string
	}{
		{"# measured\n12ms\n\n 3.5ms # fast\n1.5s\n7\n0\n", []time.Duration{12 * time.Millisecond, 3500 * time.Microsecond, 1500 * time.Millisecond, 7 * time.Millisecond, 0}, ""},
		{"2.5\r\n1e3\n", []time.Duration{2500 * time.Microsecond, time.Second}, ""},
		{"1.001\n4.35\n", []time.Duration{1001 * time.Microsecond, 4350 * time.Microsecond}, ""}, // not a nanosecond short
		{"12ms\nabc\n", nil, `f.txt:2: "abc" is not a duration (e.g. 12ms) or a number of ms`},
		{"NaN\n", nil, `f.txt:1: "NaN" is not a duration`},
		{"1e13\n", nil, `f.txt:1: "1e13" is not a duration`},
		{"-3ms\n", nil, "f.txt:1: a service time must be >= 0, got -3ms"},
		{"1\n-0.5\n", nil, "f.txt:2: a service time must be >= 0"},
		{"# nothing\n\n", nil, "f.txt holds no service time"},
		{"", nil, "f.txt holds no service time"},
		{"0\n0s\n", nil, "f.txt: the service times must not all be 0"},
		{strings.Repeat("1", 70000) + "\n", nil, "f.txt: bufio.Scanner: token too long"},
	} {
		got, err := ReadDurations(strings.NewReader(c.text), "f.txt")
		checkParse(t, "ReadDurations", c.text[:min(len(c.text), 40)], got, err, c.want, c.err)
	}
}

// checkParse checks one case of a parser's table: the values it returned, or an error that
// contains wantErr.
func checkParse[T comparable](t *testing.T, fn, in string, got []T, err error, want []T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s(%q) = %v, %v; want an error containing %q", fn, in, got, err, wantErr)
		}
		return
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("%s(%q) = %v, %v; want %v", fn, in, got, err, want)
	}
}

// FuzzReadDurations: whatever the input, ReadDurations either fails or returns service times
// that keep its rules (each >= 0, at least one above 0), one per line that holds a value.
func FuzzReadDurations(f *testing.F) {
	f.Add("# measured\n12ms\n\n 3.5ms # fast\n1.5s\n7\n0\n")
	f.Add("0\n0s\n")
	f.Add("-3ms\n1e12\n")
	f.Add("1e-300\n9223372036854775807ns\n")
	f.Fuzz(func(t *testing.T, text string) {
		ds, err := ReadDurations(strings.NewReader(text), "f")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		if len(ds) == 0 || !slices.ContainsFunc(ds, func(d time.Duration) bool { return d > 0 }) {
			t.Fatalf("accepted %v: no service time above 0", ds)
		}
		for _, d := range ds {
			if d < 0 {
				t.Fatalf("accepted a negative service time %v", d)
			}
		}
		if lines := strings.Count(text, "\n") + 1; len(ds) > lines {
			t.Fatalf("%d service times from %d lines", len(ds), lines)
		}
	})
}

// FuzzParseService: whatever the value (files aside), ParseService either fails or returns a
// spec whose distribution the simulator accepts.
func FuzzParseService(f *testing.F) {
	for _, s := range []string{"mixture", "exponential:10ms", "exponential:-1ms", "mixture:2", "gamma", "exponential:1e-9s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, _, _ := strings.Cut(strings.TrimSpace(s), ":"); strings.EqualFold(k, ServiceEmpirical) {
			t.Skip("reads a file")
		}
		spec, err := ParseService(s)
		if err != nil {
			return
		}
		if spec.Kind == ServiceExponential && spec.Mean <= 0 {
			t.Fatalf("%q: accepted mean %v", s, spec.Mean)
		}
		if err := validateDistribution(spec.Distribution()); err != nil {
			t.Fatalf("%q: accepted a distribution the simulator refuses: %v", s, err)
		}
	})
}
