package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// A collapsed run has no p99: -timeline must not print (or write) "p99 0.0 ms" for it.
func TestTimelineCollapseNoFigure(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-timeline", "-calls", "20000", "-setups", "hedge, no budget", "-loads", "95", "-seeds", "1",
		"-cancellation", "ignored", "-out", dir}
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, _ := os.ReadFile(filepath.Join(dir, "timeline.md"))
	if strings.Contains(stdout.String(), "p99 0.0 ms") || strings.Contains(string(md), "p99 0.0 ms") {
		t.Errorf("a collapsed run reported with p99 0.0 ms:\n%s\ntimeline.md: %s", stdout.String(), firstLines(string(md), 3))
	}
}

// -deadline far in the future (in effect: none) must not fail the calls.
func TestHugeDeadlineFlag(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-calls", "2000", "-setups", "no hedge", "-loads", "50", "-seeds", "1",
		"-cancellation", "ignored", "-deadline", "2562047h47m16s", "-out", dir}
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "failed") {
		t.Errorf("-deadline 2562047h47m16s fails calls:\n%s", firstLines(stdout.String(), 8))
	}
}

// An impossible -calls is a usage error naming -calls, not an internal MaxEvents overflow.
func TestHugeCallsFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-calls", "100000000000000000", "-setups", "no hedge", "-loads", "50", "-seeds", "1", "-cancellation", "ignored", "-out", t.TempDir()}
	code := run(context.Background(), args, &stdout, &stderr, false)
	if code != 2 || strings.Contains(stderr.String(), "MaxEvents") {
		t.Errorf("exit %d, stderr: %s", code, stderr.String())
	}
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// A simulated run that panicked is reported on one line, then with the stack it panicked
// on: the error's message leaves the stack out, and a bug report needs it.
func TestPrintErrorGivesAPanicsStack(t *testing.T) {
	var b strings.Builder
	printError(&b, fmt.Errorf("sweep: %w", &sim.PanicError{Run: 3, Value: "boom", Stack: []byte("goroutine 7 [running]:\nsim.(*sim).run(...)\n")}))
	if want := "hedgesim: sweep: sim: run 3 panicked: boom\ngoroutine 7 [running]:\nsim.(*sim).run(...)\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
	b.Reset()
	printError(&b, errors.New("sim: Workers must be >= 1"))
	if want := "hedgesim: sim: Workers must be >= 1\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}
