package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
	"go.uber.org/goleak"
)

// Every test leaves no goroutine behind: servers closed, connections closed, calls ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseArgsDefaults(t *testing.T) {
	c, err := parseArgs(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.run
	if r.calls != defaultCalls || r.workers != 16 || r.timeScale != 1 || r.band != 15 ||
		strings.Join(r.setups, ";") != "no hedge;recommended" || len(r.loads) != 3 || len(r.modes) != 2 ||
		r.service.Mean() < 14*1e6 || c.out != defaultOut {
		t.Errorf("defaults = %+v", c)
	}
	if measured := r.calls - int(r.warmup*float64(r.calls)); measured < 20000 {
		t.Errorf("%d measured calls per point by default, want at least 20,000", measured)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-calls", "10"},
		{"-time-scale", "0.01"},
		{"-time-scale", "2"},
		{"-loads", "100"},
		{"-setups", "no such setup"},
		{"-cancellation", "sometimes"},
		{"-protocol", "http/3"},
		{"-service", "exponential:-1ms"},
		{"-replicas", "65"},
		{"-replicas", "2", "-balancer", "nearest"},
		{"-band", "0"},
		{"-server-scale", "0"},
		{"-server-scale", "3"},
		{"-protocol", "grpc", "-replicas", "2", "-balancer", "random"},
		{"-clients", "0"},
		{"-clients", "257"},
		{"stray"},
	} {
		if _, err := parseArgs(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseArgs(%q) = nil error", args)
		}
	}
	// More clients than calls: each client's twin in the simulator would be refused, and most
	// clients would make no call.
	if _, err := parseArgs([]string{"-clients", "200", "-calls", "100"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-clients 200 is more than -calls 100") {
		t.Errorf("-clients 200 -calls 100: %v, want the clients refused", err)
	}
	if _, err := parseArgs([]string{"-clients", "100", "-calls", "100"}, &bytes.Buffer{}); err != nil {
		t.Errorf("-clients 100 -calls 100: %v", err)
	}
	c, err := parseArgs([]string{"-setups", "Recommended ; no  hedge", "-protocol", "both", "-cancellation", "reaches", "-time-scale", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.run.setups, ";") != "recommended;no hedge" || len(c.run.protocols) != 2 || c.run.modes[0] != "reaches" || c.run.timeScale != 0.5 {
		t.Errorf("parsed %+v", c.run)
	}
	if c, err := parseArgs([]string{"-protocol", "gRPC"}, &bytes.Buffer{}); err != nil || !slices.Equal(c.run.protocols, []string{GRPC}) {
		t.Errorf("-protocol gRPC: %v, %v", c.run.protocols, err)
	}
	if c.run.serverScale != 1 || c.run.clients != 1 {
		t.Errorf("-server-scale defaults to %v, -clients to %d; want 1, 1", c.run.serverScale, c.run.clients)
	}
	if c, err := parseArgs([]string{"-clients", "32", "-replicas", "4"}, &bytes.Buffer{}); err != nil || c.run.clients != 32 || runModel(c.run).Clients != 32 {
		t.Errorf("-clients 32: %d, %v", c.run.clients, err)
	}
	if c, err := parseArgs([]string{"-clients", "2", "-concurrency", "8", "-workers", "17"}, &bytes.Buffer{}); err != nil || c.run.clients != 2 || c.run.callers != 8 || runModel(c.run).Clients != 2 {
		t.Errorf("-clients 2 -concurrency 8: %+v, %v", c.run, err)
	}
	// Over gRPC with replicas, hedgegrpc's balancer routes, and each twin follows it.
	if c, err := parseArgs([]string{"-protocol", "grpc", "-replicas", "4"}, &bytes.Buffer{}); err != nil || c.run.balancer != "" {
		t.Errorf("-protocol grpc -replicas 4: balancer %q, %v", c.run.balancer, err)
	} else {
		sets, err := setups([]string{sim.SetupServerAssisted, sim.SetupServerAssistedOOB}, 20*time.Millisecond, 1)
		if err != nil {
			t.Fatal(err)
		}
		perCall, oob := twinBalancer(c.run, job{setup: sets[0], protocol: GRPC}), twinBalancer(c.run, job{setup: sets[1], protocol: GRPC})
		if perCall != sim.BalancerP2C || oob != sim.BalancerP2C {
			t.Errorf("gRPC twins' balancers: %q per call, %q out of band; want p2c, p2c", perCall, oob)
		}
	}
	if c, err := parseArgs([]string{"-server-scale", "1.1"}, &bytes.Buffer{}); err != nil || c.run.serverScale != 1.1 {
		t.Errorf("-server-scale 1.1: %v, %v", c.run.serverScale, err)
	}
}

// A run that falls behind is told to run fewer points at once; other errors get no hint.
func TestBehindHint(t *testing.T) {
	behind := fmt.Errorf("point: %w", &BehindError{Call: 7, Lag: time.Second, MaxLag: 100 * time.Millisecond})
	if h := behindHint(behind, 4); !strings.Contains(h, "-parallel 2") {
		t.Errorf("hint at -parallel 4: %q, want it to suggest -parallel 2", h)
	}
	if h := behindHint(behind, 2); !strings.Contains(h, "-parallel 1;") {
		t.Errorf("hint at -parallel 2: %q, want it to suggest -parallel 1", h)
	}
	if h := behindHint(behind, 1); strings.Contains(h, "-parallel") || !strings.Contains(h, "quieter machine") {
		t.Errorf("hint at -parallel 1: %q", h)
	}
	if h := behindHint(errors.New("connection refused"), 4); h != "" {
		t.Errorf("hint for another error: %q", h)
	}
}

// A bad command line exits with status 2 and says what is wrong.
func TestRunMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain(t.Context(), []string{"-loads", "abc"}, &out, &errb, false); code != 2 || !strings.Contains(errb.String(), "-loads") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if code := runMain(t.Context(), []string{"-h"}, &out, &errb, false); code != 0 || !strings.Contains(errb.String(), "-time-scale") {
		t.Errorf("-h: exit %d", code)
	}
}

// The README's commands for hedgeload work as written (from this directory), and it states
// the standard comparison's duration as -h does.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	lines := strings.Split(string(readme), "\n")
	for i := 0; i < len(lines); i++ {
		rest, ok := strings.CutPrefix(lines[i], "go run . ")
		if !ok || !strings.Contains(string(readme), "cd hedgeload") {
			continue
		}
		for strings.HasSuffix(rest, "\\") && i+1 < len(lines) { // a command continued on the next line
			i++
			rest = strings.TrimSuffix(rest, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmds = append(cmds, shellWords(t, rest))
	}
	if len(cmds) < 2 {
		t.Fatalf("found %d hedgeload commands in the README, want its two", len(cmds))
	}
	for _, args := range cmds {
		if _, err := parseArgs(args, &bytes.Buffer{}); err != nil {
			t.Errorf("README command %q: %v", args, err)
		}
	}
	minutes := regexp.MustCompile(`standard comparison.*\(about ([0-9.]+) minutes`)
	want := minutes.FindStringSubmatch(usageText)
	if want == nil {
		t.Fatal("-h does not say how long the standard comparison takes")
	}
	re := regexp.MustCompile(`about ([0-9.]+) minutes; results in BENCHMARKS.md`)
	if got := re.FindStringSubmatch(string(readme)); got == nil || got[1] != want[1] {
		t.Errorf("the README gives the standard comparison %v minutes, -h %s", got, want[1])
	}
}

// shellWords splits a command line as a shell would, for the README's commands: words apart by
// spaces, a double-quoted string one word.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("README command with an unclosed quote: %s", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
