package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// A closed loop's point is bounded in time as an open loop's is: its callers send its calls
// no faster than min(-concurrency, the workers) of them at once can be served, so -calls × the
// mean service time / that many is the least it takes. checkPace bounded only the open loop:
// one caller sending 100,000 calls of an hour each was accepted and would have run for eleven
// years without a word (its deadline 300,000 hours), and at two hours a call the deadline
// (twice 1.5 × the calls' time) overflowed and came out as a minute.
func TestClosedLoopPaceBounded(t *testing.T) {
	for _, args := range [][]string{
		{"-concurrency", "1", "-service", "exponential:1h", "-calls", "100000"},
		{"-concurrency", "1", "-service", "exponential:2h", "-calls", "1000000"},
		{"-concurrency", "4", "-workers", "2", "-service", "exponential:1m", "-calls", "100000"}, // 2 workers serve at most 2 at once
	} {
		c, err := parseArgs(args, &bytes.Buffer{})
		var ue *usageError
		if err == nil {
			r := c.run
			t.Errorf("parseArgs(%q) accepted a closed loop whose point takes at least %v (its deadline: %v)", args,
				time.Duration(float64(r.calls)*float64(r.service.Mean())/float64(min(r.callers, r.workers*r.replicas))),
				pointDeadline(r, r.loads[0], scaleDist(r.service, r.timeScale)))
		} else if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-concurrency") {
			t.Errorf("parseArgs(%q) = %v, want a usage error that names -concurrency", args, err)
		}
	}
	// The documented closed loops still run, and a closed loop's deadline is never below the
	// time its calls need.
	for _, args := range [][]string{
		{"-concurrency", "64", "-service", "stragglers", "-workers", "256"},
		{"-concurrency", "16", "-workers", "33"},
		{"-concurrency", "1", "-calls", "1000000"},
	} {
		c, err := parseArgs(args, &bytes.Buffer{})
		if err != nil {
			t.Errorf("parseArgs(%q) = %v", args, err)
			continue
		}
		r := c.run
		need := time.Duration(float64(r.calls) * float64(r.service.Mean()) / float64(min(r.callers, r.workers*r.replicas)))
		if d := pointDeadline(r, r.loads[0], scaleDist(r.service, r.timeScale)); d < need {
			t.Errorf("parseArgs(%q): deadline %v, below the %v its calls need", args, d, need)
		}
	}
}
