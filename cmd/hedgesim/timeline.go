package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hedgekit/hedge/sim"
	"github.com/hedgekit/hedge/sim/report"
)

// runTimeline follows one run of each setup second by second (-timeline) and writes
// timeline.html, timeline.md and timeline.json into -out; it prints, for each setup, its p99 and its busiest
// second of hedges.
func runTimeline(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	tls, err := sim.Timelines(ctx, cfg.withPolicy(cfg.sweepConfig()), 0)
	if err != nil {
		printError(stderr, err)
		return 1
	}
	var md, page bytes.Buffer
	err = report.WriteTimelineMarkdown(&md, tls)
	if err == nil {
		err = report.WriteTimelineHTML(&page, tls)
	}
	var js []byte
	if err == nil {
		js, err = json.MarshalIndent(tls, "", "  ")
	}
	if err == nil {
		err = report.WriteFiles(cfg.out, map[string][]byte{"timeline.md": md.Bytes(), "timeline.html": page.Bytes(), "timeline.json": append(js, '\n')})
	}
	if err != nil {
		printError(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "Timeline: %s (charts), %s, %s\n\n", filepath.Join(cfg.out, "timeline.html"), filepath.Join(cfg.out, "timeline.md"), filepath.Join(cfg.out, "timeline.json"))
	for _, tl := range tls {
		busiest, at := 0, -1
		for i, s := range tl.Seconds {
			if s.Hedges > busiest {
				busiest, at = s.Hedges, i
			}
		}
		p99 := fmt.Sprintf("%.1f ms", tl.P99Ms)
		switch {
		case tl.Collapse:
			p99 = "collapse" // the run has no percentiles
		case sim.IsFailed(tl.P99Ms):
			p99 = "failed" // it lands on a failed call
		}
		fmt.Fprintf(stdout, "%s: p99 %s", report.TimelineName(tl), p99)
		if at >= 0 {
			fmt.Fprintf(stdout, "; most hedges in a second: %d (second %d, %d won)", busiest, at, tl.Seconds[at].Won)
		}
		fmt.Fprintln(stdout)
	}
	return 0
}
