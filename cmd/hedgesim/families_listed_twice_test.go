package main

import (
	"bytes"
	"testing"
)

// TestFamiliesListedTwiceRefused: -seeds, -loads and -setups refuse a value listed twice;
// -families ran a family listed twice twice, and the scorecard's "holds on N of M points"
// counted each of its points twice.
func TestFamiliesListedTwiceRefused(t *testing.T) {
	for _, fams := range []string{"reference,reference", "bursty, few-workers,bursty"} {
		cfg, err := parseArgs([]string{"-scorecard", "-families", fams}, testNames, testFamilies, &bytes.Buffer{})
		if err == nil {
			t.Errorf("-scorecard -families %q: accepted (families %v), want a usage error", fams, cfg.families)
			continue
		}
		if _, ok := err.(*usageError); !ok {
			t.Errorf("-families %q: error %T %v, want *usageError", fams, err, err)
		}
	}
}
