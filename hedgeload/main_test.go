package main

import (
	"bytes"
	"strings"
	"testing"

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
		{"stray"},
	} {
		if _, err := parseArgs(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseArgs(%q) = nil error", args)
		}
	}
	c, err := parseArgs([]string{"-setups", "Recommended ; no  hedge", "-protocol", "both", "-cancellation", "reaches", "-time-scale", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.run.setups, ";") != "recommended;no hedge" || len(c.run.protocols) != 2 || c.run.modes[0] != "reaches" || c.run.timeScale != 0.5 {
		t.Errorf("parsed %+v", c.run)
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
