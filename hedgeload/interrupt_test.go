package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An interrupted run (Ctrl-C) that no point of had ended wrote an empty report ("0 of 0
// points agree") over the one an earlier run left in -out, the published report of
// "go run . -out ../docs/hedgeload" included. It writes nothing, says so, and exits 1 at once.
func TestInterruptBeforeAnyPointKeepsTheEarlierReport(t *testing.T) {
	out := t.TempDir()
	earlier := []byte("# an earlier run's report\n")
	for _, f := range []string{"report.md", "report.html", "report.json"} {
		if err := os.WriteFile(filepath.Join(out, f), earlier, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A point of 20,000 calls at 10 % load takes about three minutes; the interrupt comes
	// after the (short) calibration, while the point runs.
	cfg, err := parseArgs([]string{"-calls", "20000", "-loads", "10", "-setups", "no hedge", "-cancellation", "ignored",
		"-max-lag", "10s", "-quiet", "-out", out}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.run.calibrateN = 50
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(2*time.Second, cancel)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := execute(ctx, cfg, &stdout, &stderr, false)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the interrupted run took %v to end", took)
	}
	if code != 1 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %d, stderr %q; want 1, saying it was interrupted", code, stderr.String())
	}
	for _, f := range []string{"report.md", "report.html", "report.json"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || !bytes.Equal(b, earlier) {
			t.Errorf("%s: the interrupted run replaced the earlier report (%v):\n%.300s", f, err, b)
		}
	}
}
