package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestScorecardWithNoPointFails: a family with a MaxLoadPct (replica-refusing: 70 %) runs
// no load above it, so "-families replica-refusing -loads 85,95" leaves the scorecard nothing
// to judge. It ran nothing, exited 0 and wrote a scorecard that "holds on 0 of 0 points",
// which reads as a pass.
func TestScorecardWithNoPointFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	args := []string{"-scorecard", "-families", "replica-refusing", "-loads", "85,95", "-seeds", "1", "-calls", "1000", "-out", dir}
	code := run(context.Background(), args, &stdout, &stderr, false)
	if code == 0 {
		t.Errorf("exit 0 with nothing judged; stdout: %s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "scorecard.md")); err == nil {
		t.Errorf("wrote %s for a scorecard of no point", filepath.Join(dir, "scorecard.md"))
	}
}
