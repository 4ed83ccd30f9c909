// Command hedgesim simulates what request hedging does to the tail latency of calls when every
// attempt waits in the same queue, for every setup of the library at every load, with the
// cancellation of losing attempts ignored by the server and reaching it. It writes report.md,
// report.html (charts) and report.json (every figure, for scripts) into -out, and prints the p99
// tables. The model and the report are described in SIMULATION.md; "hedgesim -h" lists the flags.
//
// The run is deterministic: the same flags and seeds give byte-identical files.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hedgekit/hedge/sim"
	"github.com/hedgekit/hedge/sim/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr))
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a terminal: progress goes to stderr only then, so that logs and
// CI output do not fill with carriage returns.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// run is the whole command; it returns the exit status: 0 done, 1 the run failed, 2 a bad
// command line (an -out it cannot write included). showProgress writes a "points 12/80" line on stderr while the sweep runs.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, showProgress bool) int {
	cfg, err := parseArgs(args, sim.SetupNames(), sim.FamilyNames(), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "hedgesim: %v\nRun 'hedgesim -h' for the flags.\n", err)
		return 2
	}
	if cfg.tablesOnly {
		return execute(ctx, cfg, stdout, stderr, showProgress)
	}
	// A run of minutes must not end on an -out it cannot write.
	undo, err := report.PrepareDir(cfg.out)
	if err != nil {
		fmt.Fprintf(stderr, "hedgesim: -out: %v\nRun 'hedgesim -h' for the flags.\n", err)
		return 2
	}
	code := execute(ctx, cfg, stdout, stderr, showProgress)
	if code != 0 {
		undo() // a failed run leaves no empty directory behind
	}
	return code
}

// execute runs what cfg asks for, once the command line and -out are known to be good, and
// returns the exit status.
func execute(ctx context.Context, cfg config, stdout, stderr io.Writer, showProgress bool) int {
	if cfg.scorecard {
		return runScorecard(ctx, cfg, stdout, stderr, showProgress)
	}
	if cfg.timeline {
		return runTimeline(ctx, cfg, stdout, stderr)
	}
	var rep sim.Report
	var err error
	if cfg.from != "" {
		rep, err = readReport(cfg.from)
	} else {
		rep, err = sweep(ctx, cfg, stderr, showProgress)
	}
	if err != nil {
		printError(stderr, err)
		return 1
	}

	if cfg.tablesOnly {
		if err := writeTables(stdout, rep); err != nil {
			printError(stderr, err)
			return 1
		}
		return 0
	}
	if err := writeReport(cfg.out, rep); err != nil {
		printError(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "Report: %s (charts and tables), %s, %s\n\n",
		filepath.Join(cfg.out, "report.html"), filepath.Join(cfg.out, "report.md"), filepath.Join(cfg.out, "report.json"))
	if err := report.WriteHeadline(stdout, rep); err != nil {
		printError(stderr, err)
		return 1
	}
	return 0
}

// sweepConfig is the sim.SweepConfig the command line asks for. A family's own workers and
// service time apply unless -workers or -service say otherwise.
func (c config) sweepConfig() sim.SweepConfig {
	sc := sim.SweepConfig{
		Workers:        c.workers,
		HedgeDelay:     c.hedgeDelay,
		Calls:          c.calls,
		Seeds:          c.seeds,
		Loads:          c.loads,
		Setups:         c.setups,
		Modes:          c.modes,
		Family:         c.family,
		Clients:        c.clients,
		ClientInFlight: c.inflight,
		Replicas:       c.replicas,
		Balancers:      c.balancers,
		TieDelay:       c.tieDelay,
		Timeout:        c.deadline,
	}
	if c.family == "" || c.service.Kind != sim.ServiceMixture {
		sc.Service = c.service.Distribution()
	}
	if c.family != "" && !c.workersSet {
		sc.Workers = 0
	}
	return sc
}

// runScorecard runs the safety scorecard and writes scorecard.md, scorecard.html and
// scorecard.json into -out.
func runScorecard(ctx context.Context, cfg config, stdout, stderr io.Writer, showProgress bool) int {
	start := time.Now()
	var mu sync.Mutex
	var progress func(done, total int)
	if showProgress {
		progress = func(done, total int) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "\rruns %d/%d", done, total)
		}
	}
	res, err := sim.Scorecard(ctx, sim.ScorecardConfig{
		Setup:     cfg.setups[0],
		Candidate: cfg.candidate(), // -config: the file's policy
		Families:  cfg.families,
		Loads:     cfg.loads,
		Modes:     cfg.modes,
		Seeds:     cfg.seeds,
		Calls:     cfg.calls,
	}, progress)
	if showProgress {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		printError(stderr, err)
		return 1
	}
	var md, js bytes.Buffer
	if err := report.WriteScorecardMarkdown(&md, res); err != nil {
		printError(stderr, err)
		return 1
	}
	if err := report.WriteScorecardJSON(&js, res); err != nil {
		printError(stderr, err)
		return 1
	}
	var page bytes.Buffer
	if err := report.WriteScorecardHTML(&page, res); err != nil {
		printError(stderr, err)
		return 1
	}
	if err := report.WriteFiles(cfg.out, map[string][]byte{"scorecard.md": md.Bytes(), "scorecard.json": js.Bytes(), "scorecard.html": page.Bytes()}); err != nil {
		printError(stderr, err)
		return 1
	}
	held, total := res.Held()
	paid, checked := res.Paid()
	fmt.Fprintf(stdout, "Scorecard of %s against no hedge: holds on %d of %d points; payoff on %d of %d checked points "+
		"(%d calls per run, %.0f s).\nScorecard: %s, %s, %s\n", res.Setup, held, total, paid, checked, cfg.calls,
		time.Since(start).Seconds(), filepath.Join(cfg.out, "scorecard.md"), filepath.Join(cfg.out, "scorecard.html"),
		filepath.Join(cfg.out, "scorecard.json"))
	return 0
}

// sweep runs the simulation, with a progress line on stderr when showProgress is set.
func sweep(ctx context.Context, cfg config, stderr io.Writer, showProgress bool) (sim.Report, error) {
	var progress func(done, total int)
	start := time.Now()
	var mu sync.Mutex // progress may be called from the sweep's workers
	last := -1
	if showProgress {
		progress = func(done, total int) {
			mu.Lock()
			defer mu.Unlock()
			if done == last {
				return
			}
			last = done
			fmt.Fprintf(stderr, "\rpoints %d/%d", done, total)
		}
	}
	rep, err := sim.Sweep(ctx, cfg.withPolicy(cfg.sweepConfig()), progress)
	if showProgress {
		mu.Lock()
		if last >= 0 {
			fmt.Fprintf(stderr, " in %.1fs\n", time.Since(start).Seconds())
		}
		mu.Unlock()
	}
	return rep, err
}

// readReport reads a report.json written by an earlier run (-from). Any JSON object decodes
// into a sim.Report, so a file that is JSON but not a report ('{}', a scorecard.json) is
// refused here rather than rendered as an empty report: a report has points, and every point
// belongs to a setup, a seed and a cancellation mode its model lists.
func readReport(path string) (sim.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sim.Report{}, err
	}
	var rep sim.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return sim.Report{}, fmt.Errorf("%s: %v", path, err)
	}
	m := rep.Model
	switch {
	case len(rep.Points) == 0 || len(m.Setups) == 0 || len(m.Seeds) == 0 || m.Calls <= 0:
		return sim.Report{}, fmt.Errorf("%s is not a hedgesim report.json: it has no points, or its model no setups, seeds or calls", path)
	}
	for i, p := range rep.Points {
		if !slices.Contains(m.Setups, p.Setup) || !slices.Contains(m.Seeds, p.Seed) ||
			(p.Cancellation != sim.Ignored && p.Cancellation != sim.Reaches) {
			return sim.Report{}, fmt.Errorf("%s is not a hedgesim report.json: its point %d (setup %q, seed %d, cancellation %q) is not one of its model's",
				path, i+1, p.Setup, p.Seed, p.Cancellation)
		}
	}
	return rep, nil
}

// writeReport writes report.md, report.html and report.json into dir, creating it if needed.
// All three are rendered first, and a failure leaves an earlier run's files as they were
// (report.WriteFiles).
func writeReport(dir string, rep sim.Report) error {
	files := map[string][]byte{}
	for _, f := range []struct {
		name  string
		write func(io.Writer, sim.Report) error
	}{
		{"report.json", report.WriteJSON},
		{"report.md", report.WriteMarkdown},
		{"report.html", report.WriteHTML},
	} {
		var b bytes.Buffer
		if err := f.write(&b, rep); err != nil {
			return fmt.Errorf("%s: %v", f.name, err)
		}
		files[f.name] = b.Bytes()
	}
	return report.WriteFiles(dir, files)
}

// writeTables writes the Markdown tables of each seed (-tables-only).
func writeTables(w io.Writer, rep sim.Report) error {
	seeds := rep.Model.Seeds
	for i, s := range seeds {
		if len(seeds) > 1 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "# Seed %d\n\n", s)
		}
		if err := report.WriteMarkdownTables(w, rep, s); err != nil {
			return err
		}
	}
	return nil
}

// printError writes err on one line, then, for a simulated run that panicked (a bug, in a
// distribution or an Observer of the user's or in the simulator), the stack it panicked
// on, which a bug report needs.
func printError(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "hedgesim: %v\n", err)
	if pe, ok := errors.AsType[*sim.PanicError](err); ok {
		fmt.Fprintf(stderr, "%s", pe.Stack)
	}
}
