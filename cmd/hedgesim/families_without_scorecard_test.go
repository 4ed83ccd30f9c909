package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFamiliesNeedsScorecard: -families chooses the scorecard's families and nothing
// else; given without -scorecard (a slip for -family) it was ignored and the run simulated
// the reference model, where the command refuses other flags that would do nothing
// (-balancer without replicas, a model flag with -scorecard, -deadline with -scorecard).
func TestFamiliesNeedsScorecard(t *testing.T) {
	for _, args := range [][]string{{"-families", "bursty"}, {"-families", "bursty", "-family", "few-workers"}, {"-timeline", "-families", "bursty", "-loads", "50", "-seeds", "1", "-cancellation", "ignored"}} {
		cfg, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{})
		if err == nil {
			t.Errorf("%q: accepted (scorecard %v, family %q, families %v); want a usage error", args, cfg.scorecard, cfg.family, cfg.families)
			continue
		}
		if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), "-families") {
			t.Errorf("%q: error %v, want a usage error naming -families", args, err)
		}
	}
	// -families all, its default, is fine anywhere; with -scorecard every family is fine.
	for _, args := range [][]string{{"-families", "all"}, {"-scorecard", "-families", "bursty"}} {
		if _, err := parseArgs(args, testNames, testFamilies, &bytes.Buffer{}); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}
