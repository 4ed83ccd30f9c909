package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hedgekit/hedge/sim"
)

// runTimeline follows one run of each setup second by second (-timeline) and writes
// timeline.md and timeline.json into -out; it prints, for each setup, its p99 and its busiest
// second of hedges.
func runTimeline(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	tls, err := sim.Timelines(ctx, cfg.withPolicy(cfg.sweepConfig()), 0)
	if err != nil {
		fmt.Fprintf(stderr, "hedgesim: %v\n", err)
		return 1
	}
	var md bytes.Buffer
	writeTimelines(&md, tls)
	js, err := json.MarshalIndent(tls, "", "  ")
	if err == nil {
		err = writeFiles(cfg.out, map[string][]byte{"timeline.md": md.Bytes(), "timeline.json": append(js, '\n')})
	}
	if err != nil {
		fmt.Fprintf(stderr, "hedgesim: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Timeline: %s, %s\n\n", filepath.Join(cfg.out, "timeline.md"), filepath.Join(cfg.out, "timeline.json"))
	for _, tl := range tls {
		busiest, at := 0, -1
		for i, s := range tl.Seconds {
			if s.Hedges > busiest {
				busiest, at = s.Hedges, i
			}
		}
		fmt.Fprintf(stdout, "%s: p99 %.1f ms", timelineName(tl), tl.P99Ms)
		if at >= 0 {
			fmt.Fprintf(stdout, "; most hedges in a second: %d (second %d, %d won)", busiest, at, tl.Seconds[at].Won)
		}
		fmt.Fprintln(stdout)
	}
	return 0
}

// timelineName is a timeline's setup, with its balancer when it has one.
func timelineName(tl sim.Timeline) string {
	if tl.Balancer == "" {
		return tl.Setup
	}
	return tl.Setup + " · " + tl.Balancer
}

// writeTimelines writes one Markdown table per timeline: a row per second.
func writeTimelines(w io.Writer, tls []sim.Timeline) {
	for i, tl := range tls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "## %s\n\n%g %% load, cancellation %s, seed %d: p99 %.1f ms\n\n", timelineName(tl), tl.LoadPct, tl.Cancellation, tl.Seed, tl.P99Ms)
		fmt.Fprintf(w, "| second | calls | over %g ms | p99 (ms) | hedges | won | refused |\n", tl.SlowAfterMs)
		fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		for k, s := range tl.Seconds {
			reasons := make([]string, 0, len(s.Refused))
			for r, n := range s.Refused {
				reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
			}
			slices.Sort(reasons)
			fmt.Fprintf(w, "| %d | %d | %d | %.1f | %d | %d | %s |\n", k, s.Calls, s.Slow, s.P99Ms, s.Hedges, s.Won, strings.Join(reasons, ", "))
		}
	}
}
