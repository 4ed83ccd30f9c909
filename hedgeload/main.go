// Command hedgeload checks the simulator against real servers: the same queueing model on
// loopback HTTP servers, real timers and the library's real transport, with the simulator's
// prediction beside each real figure.
//
// Each server is a hedgehttp.Queue of W workers whose handler holds its worker for a service
// time drawn from the simulator's own distributions; the load is open-loop Poisson, sent
// through hedgehttp.Transport with the simulator's own setups, and each call's latency is
// measured from the moment it was due (a stalled generator cannot hide the queue). The same
// points are then simulated, their answers late by the client delay measured on the machine
// (each open-loop point's own calls': the generator's lag, the way to the server and back),
// and report.md, report.html and report.json hold both, with the machine's calibration
// (timer slack, loopback round trip) and whether each point agrees. "hedgeload -h" lists the
// flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/schollz/progressbar/v3"

	simreport "github.com/hedgekit/hedge/sim/report"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Every call allocates a few kB; at the default GOGC the collector's worker would
		// take one of two cores several times a second, and the generator would wait for it.
		debug.SetGCPercent(400)
	}
	ctx, stop := interruptContext()
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr))
	stop()
	os.Exit(code)
}

// interruptContext returns a context that ends at the first interrupt (Ctrl-C), after which
// the run winds down and writes what it has. A second interrupt ends the process at once (exit
// status 130, a shell's for an interrupt), so that a teardown that is slow (a fleet of clients,
// a call held to its timeout) can be cut short. One goroutine receives both: restoring the
// signal's default action once the first had arrived left a moment in which the second was
// caught and dropped. stop ends it, and the context.
func interruptContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		for first := true; ; first = false {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if !first {
				os.Exit(130)
			}
			cancel()
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
}

// isTerminal reports whether f is a terminal: the progress bar is drawn only there.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// behindHint is what to tell a person whose run fell behind: fewer points at once leave the
// generator more of the machine (each point has its own servers, client and pacer). atOnce is
// how many points ran at once (pointsAtOnce), not -parallel: with fewer points than -parallel,
// or in a closed loop, fewer ran, and a run of one point at a time has no lower -parallel.
func behindHint(err error, atOnce int) string {
	if !errors.Is(err, ErrBehind) {
		return ""
	}
	switch {
	case atOnce > 3:
		return fmt.Sprintf("hint: run fewer points at once (-parallel %d, or 1; %d ran at once), or on a quieter machine", atOnce/2, atOnce)
	case atOnce > 1:
		return fmt.Sprintf("hint: run one point at a time (-parallel 1; %d ran at once), or on a quieter machine", atOnce)
	}
	return "hint: the generator fell behind with one point at a time: run on a quieter machine (or at -time-scale 1, if it was lower)"
}

// runMain is the whole command; it returns the exit status.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, terminal bool) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "hedgeload: %v\nRun 'hedgeload -h' for the flags.\n", err)
		return 2
	}
	// A run of minutes must not end on an -out it cannot write.
	undo, err := simreport.PrepareDir(cfg.out)
	if err != nil {
		fmt.Fprintf(stderr, "hedgeload: -out: %v\nRun 'hedgeload -h' for the flags.\n", err)
		return 2
	}
	code := execute(ctx, cfg, stdout, stderr, terminal)
	if code != 0 {
		undo() // a run that wrote nothing leaves no empty directory behind
	}
	return code
}

// execute runs cfg, once the command line and -out are known to be good, and returns the exit
// status.
func execute(ctx context.Context, cfg config, stdout, stderr io.Writer, terminal bool) int {
	var progress func(done, total int, r Result)
	if cfg.progress && terminal {
		var bar *progressbar.ProgressBar
		progress = func(done, total int, r Result) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr),
					progressbar.OptionSetDescription("points"), progressbar.OptionShowCount(),
					progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
			}
			bar.Set(done)
		}
	}
	rep, runErr := run(ctx, cfg.run, progress)
	interrupted := ctx.Err() != nil && errors.Is(runErr, context.Canceled)
	if interrupted && len(rep.Points) == 0 {
		// Interrupted (Ctrl-C) before any point ended: there is nothing to report, and an empty
		// report would replace an earlier run's in -out.
		fmt.Fprintf(stderr, "hedgeload: interrupted before any point ended; nothing written to %s\n", cfg.out)
		return 1
	}
	if len(rep.Points) > 0 || rep.Stopped != "" {
		if err := writeReport(cfg.out, rep); err != nil {
			fmt.Fprintf(stderr, "hedgeload: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "Report: %s, %s, %s\n", filepath.Join(cfg.out, "report.md"),
			filepath.Join(cfg.out, "report.html"), filepath.Join(cfg.out, "report.json"))
	}
	if interrupted {
		fmt.Fprintf(stderr, "hedgeload: interrupted: the report holds the %d points that ended\n", len(rep.Points))
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, runErr)
		if hint := behindHint(runErr, pointsAtOnce(cfg.run)); hint != "" {
			fmt.Fprintln(stderr, hint)
		}
		return 1
	}
	n := 0
	for _, p := range rep.Points {
		if p.Agreement.OK {
			n++
		} else {
			fmt.Fprintf(stdout, "disagrees: %s, %g%% load, %s, %s, seed %d: %s\n", p.Setup, p.LoadPct, p.Cancellation, p.Protocol, p.Seed, p.Agreement.Why)
		}
	}
	fmt.Fprintf(stdout, "%d of %d points agree with the simulator (p99 and p99.9 within ±%g %%, p50 within ±%g %%, utilisation within ±%g %% (wider over few calls), the tails also within the seeds' range; the simulator carries the measured client delay), in %.0f s\n",
		n, len(rep.Points), cfg.run.band, min(cfg.run.band, tightPct), tightPct, rep.WallSeconds)
	if !rep.Agrees() {
		return 1
	}
	return 0
}
