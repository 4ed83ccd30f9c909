package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// smallRun is a sweep small enough for a test under -race: 2 setups × 2 loads × 2 modes × 2 seeds.
var smallRun = []string{"-calls", "2000", "-seeds", "1,2", "-loads", "50,95", "-setups", "no hedge;hedge, no budget"}

func TestRunEndToEnd(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	dir1, dir2 := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(smallRun, "-out", dir1), &stdout, &stderr, true); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	// Progress: one updating line, and it reaches the total.
	if !strings.Contains(stderr.String(), "\rpoints 16/16") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("progress on stderr = %q", stderr.String())
	}
	for _, want := range []string{filepath.Join(dir1, "report.html"), "p99 latency (ms), cancellation ignored:",
		"p99 latency (ms), cancellation reaches the server:", "| hedge, no budget "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}

	js, err := os.ReadFile(filepath.Join(dir1, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.Report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("report.json does not parse: %v", err)
	}
	if len(rep.Points) != 16 || rep.Model.Calls != 2000 || !slices.Equal(rep.Model.Seeds, []uint64{1, 2}) ||
		!slices.Equal(rep.Model.Setups, []string{"no hedge", "hedge, no budget"}) {
		t.Errorf("report.json: %d points, model %+v", len(rep.Points), rep.Model)
	}
	md, _ := os.ReadFile(filepath.Join(dir1, "report.md"))
	html, _ := os.ReadFile(filepath.Join(dir1, "report.html"))
	if !bytes.Contains(md, []byte("### p99 latency (ms)")) || !bytes.Contains(html, []byte("<svg ")) {
		t.Error("report.md or report.html lacks its tables or charts")
	}

	// Same flags, same files, byte for byte; no progress when stderr is not a terminal.
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), append(smallRun, "-out", dir2), &stdout, &stderr, false); code != 0 {
		t.Fatalf("second run: exit %d, stderr:\n%s", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr without a terminal = %q, want nothing", stderr.String())
	}
	for _, f := range []string{"report.json", "report.md", "report.html"} {
		a, _ := os.ReadFile(filepath.Join(dir1, f))
		b, err := os.ReadFile(filepath.Join(dir2, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with the same flags (err %v)", f, err)
		}
	}

	// -from re-renders the same files from report.json.
	dir3 := filepath.Join(t.TempDir(), "c")
	if code := run(context.Background(), []string{"-from", filepath.Join(dir1, "report.json"), "-out", dir3}, &stdout, &stderr, false); code != 0 {
		t.Fatalf("-from: exit %d, stderr:\n%s", code, stderr.String())
	}
	for _, f := range []string{"report.json", "report.md", "report.html"} {
		a, _ := os.ReadFile(filepath.Join(dir1, f))
		b, err := os.ReadFile(filepath.Join(dir3, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s re-rendered by -from differs from the run's (err %v)", f, err)
		}
	}

	// -tables-only prints each seed's tables and writes nothing.
	stdout.Reset()
	dir4 := filepath.Join(t.TempDir(), "d")
	if code := run(context.Background(), []string{"-from", filepath.Join(dir1, "report.json"), "-tables-only", "-out", dir4}, &stdout, &stderr, false); code != 0 {
		t.Fatalf("-tables-only: exit %d, stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "# Seed 1\n") || !strings.Contains(stdout.String(), "# Seed 2\n") ||
		strings.Count(stdout.String(), "### p99 latency (ms)") != 4 {
		t.Errorf("-tables-only output:\n%s", stdout.String())
	}
	if _, err := os.Stat(dir4); !os.IsNotExist(err) {
		t.Error("-tables-only wrote files")
	}

	// The sweep leaves no goroutine behind. Its workers may still be on their way out: they
	// get five seconds, not a count of yields, which a loaded machine can use up first.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the runs, %d before", n, goroutines)
	}
}

func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // on stderr
	}{
		{[]string{"-loads", "150"}, 2, "hedgesim: -loads: each load is a % of worker capacity in (0, 100), got 150\nRun 'hedgesim -h'"},
		{[]string{"-setups", "turbo"}, 2, "hedge, default budget, adaptive limit"}, // lists the real setups
		{[]string{"-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-h"}, 0, "Usage: hedgesim"},
		{[]string{"-from", "/does/not/exist.json"}, 1, "hedgesim: open /does/not/exist.json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), c.args, &stdout, &stderr, false); code != c.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", c.args, code, c.code, stderr.String())
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote %q on stdout", c.args, stdout.String())
		}
	}
	// A cancelled run fails with exit 1 and writes no report.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "x")
	var stderr bytes.Buffer
	if code := run(ctx, append(smallRun, "-out", dir), &bytes.Buffer{}, &stderr, false); code != 1 {
		t.Errorf("cancelled run: exit %d, want 1 (stderr %q)", code, stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("a cancelled run wrote a report")
	}
}

// TestSetupNamesMatchSim: the command offers exactly the simulator's setups, the six reference
// setups of SIMULATION.md first.
func TestSetupNamesMatchSim(t *testing.T) {
	names := sim.SetupNames()
	if len(names) < 6 || !slices.Equal(names[:6], sim.ReferenceSetups) {
		t.Errorf("setups %q do not start with the reference setups %q", names, sim.ReferenceSetups)
	}
	// The spelling of SIMULATION.md's table is accepted too.
	got, err := sim.ParseSetups("hedge, budget 5 %", names)
	if err != nil || len(got) != 1 || got[0] != sim.SetupBudget5 {
		t.Errorf(`-setups "hedge, budget 5 %%" = %q, %v`, got, err)
	}
}

func TestRunScorecard(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-scorecard", "-calls", "3000", "-seeds", "1", "-loads", "30,95", "-cancellation", "ignored",
		"-families", "reference,few-workers", "-out", dir}
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Scorecard of recommended against no hedge: holds on ") ||
		!strings.Contains(stdout.String(), "of 4 points") {
		t.Errorf("stdout: %s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, "scorecard.md"))
	if err != nil || !strings.Contains(string(md), "# Safety scorecard: recommended against no hedge") {
		t.Errorf("scorecard.md: %v\n%s", err, md)
	}
	js, err := os.ReadFile(filepath.Join(dir, "scorecard.json"))
	if err != nil || !strings.Contains(string(js), `"family": "few-workers"`) {
		t.Errorf("scorecard.json: %v\n%s", err, js)
	}
	for _, c := range [][]string{
		{"-scorecard", "-setups", "no hedge;recommended"},
		{"-scorecard", "-families", "cloudy"},
		{"-family", "cloudy"},
		{"-balancer", "best"},
	} {
		if code := run(context.Background(), c, &bytes.Buffer{}, &bytes.Buffer{}, false); code != 2 {
			t.Errorf("%q: exit %d, want 2", c, code)
		}
	}
}

func TestRunFamily(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-family", "few-workers", "-calls", "3000", "-seeds", "1", "-loads", "50", "-setups", "no hedge", "-out", dir}
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	js, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if !strings.Contains(string(js), `"family": "few-workers"`) || !strings.Contains(string(js), `"workers": 4,`) {
		t.Errorf("report.json of -family few-workers:\n%s", js)
	}
}

func TestRunTimeline(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-timeline", "-calls", "5000", "-seeds", "1", "-loads", "70", "-cancellation", "ignored",
		"-setups", "no hedge;recommended", "-clients", "32", "-out", dir}
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, filepath.Join(dir, "timeline.md")) || !strings.Contains(out, "no hedge: p99 ") ||
		!strings.Contains(out, "recommended: p99 ") || !strings.Contains(out, "most hedges in a second: ") {
		t.Errorf("stdout:\n%s", out)
	}
	js, err := os.ReadFile(filepath.Join(dir, "timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tls []sim.Timeline
	if err := json.Unmarshal(js, &tls); err != nil {
		t.Fatalf("timeline.json does not parse: %v", err)
	}
	if len(tls) != 2 || tls[0].Setup != "no hedge" || tls[1].Setup != "recommended" || tls[1].LoadPct != 70 ||
		tls[1].Cancellation != "ignored" || tls[1].Seed != 1 || len(tls[1].Seconds) < 3 {
		t.Fatalf("timeline.json: %s", js)
	}
	calls, hedges := 0, 0
	for _, s := range tls[1].Seconds {
		calls += s.Calls
		hedges += s.Hedges
	}
	if calls < 5000 || hedges == 0 {
		t.Errorf("recommended's timeline: %d calls, %d hedges", calls, hedges)
	}
	md, err := os.ReadFile(filepath.Join(dir, "timeline.md"))
	if err != nil || !strings.Contains(string(md), "## recommended") || !strings.Contains(string(md), "| second | calls | failed | over 200 ms ") {
		t.Errorf("timeline.md: %v\n%s", err, md)
	}
	// Where calls fail (every call of the deadline family fails 50 ms after it arrives), the
	// p99 reads failed, everywhere.
	stdout.Reset()
	fail := []string{"-timeline", "-family", "deadline", "-calls", "5000", "-seeds", "1", "-loads", "95", "-cancellation", "ignored",
		"-setups", "no hedge", "-out", dir}
	if code := run(context.Background(), fail, &stdout, &stderr, false); code != 0 {
		t.Fatalf("deadline: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "no hedge: p99 failed") {
		t.Errorf("deadline: stdout:\n%s", stdout.String())
	}
	if js, err := os.ReadFile(filepath.Join(dir, "timeline.json")); err != nil || !strings.Contains(string(js), `"p99_ms": null`) {
		t.Errorf("deadline: timeline.json: %v\n%.400s", err, js)
	}
	page, err := os.ReadFile(filepath.Join(dir, "timeline.html"))
	if err != nil || bytes.Count(page, []byte("<svg ")) != 1 || !bytes.Contains(page, []byte("p99 failed")) {
		t.Errorf("deadline: timeline.html: %v, %d charts", err, bytes.Count(page, []byte("<svg ")))
	}
}
