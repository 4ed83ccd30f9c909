package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hedgekit/hedge/sim"
)

// WriteMarkdown writes report.md: a header with the model's parameters, then for each
// cancellation mode the tables of p99, p99.9 and p50 latency, requests per call, rejected calls,
// worker utilisation, hedge rate and win rate, wasted work and suppressed hedges by reason — one
// row per setup, one column per load. Collapsed points read "collapse" in the latency tables.
// Columns are padded so the file reads as well in a terminal as on GitHub.
//
// With several seeds each cell is the median across seeds (see the package doc), and the file
// ends with the p99 and p99.9 tables of each seed on its own.
func WriteMarkdown(w io.Writer, r sim.Report) error {
	v := newView(r)
	bw := bufio.NewWriter(w)
	bw.WriteString("# Hedging simulation\n\n")
	bw.WriteString("What hedging does to the tail when every attempt waits in the same queue.\n\n")
	if rows := v.modelRows(); len(rows) > 0 {
		t := table{head: []string{"model", "value"}}
		for _, r := range rows {
			t.rows = append(t.rows, []string{r[0], r[1]})
		}
		writeMDTable(bw, t, "")
	}
	bw.WriteString("Latencies are in milliseconds. **collapse**: the queue never drained — the load, with its " +
		"hedges and retries, was more than the workers serve, and latency grew for as long as the run lasted — " +
		"so the point has no meaningful percentiles. " +
		failedNote + " " + scorecardNote + "\n")
	if n := v.seedNote(); n != "" {
		bw.WriteString(n + " The p99 and p99.9 of each seed are at the end.\n")
	}
	bw.WriteString("\n")
	v.writeModes(bw, v.seeds, "##")
	if len(v.seeds) > 1 {
		bw.WriteString("## Each seed\n\n")
		for _, s := range v.seeds {
			for _, mode := range v.modes {
				ts := v.modeTables(mode, []uint64{s})
				for _, t := range ts[:2] { // p99, p99.9
					writeMDTable(bw, t, "### Seed "+joinSeeds([]uint64{s})+", "+modeShort(mode)+": "+t.title)
				}
			}
		}
	}
	return bw.Flush()
}

// WriteMarkdownTables writes only the tables of one seed (every cancellation mode, every table
// WriteMarkdown has), with "##" headings per mode, for documentation that quotes a single run.
// A seed that has no points gives sections with empty tables.
func WriteMarkdownTables(w io.Writer, r sim.Report, seed uint64) error {
	v := newView(r)
	bw := bufio.NewWriter(w)
	v.writeModes(bw, []uint64{seed}, "##")
	return bw.Flush()
}

// writeModes writes a section per cancellation mode, tables aggregated over seeds.
func (v *view) writeModes(bw *bufio.Writer, seeds []uint64, level string) {
	for _, mode := range v.modes {
		bw.WriteString(level + " " + modeTitle(mode) + "\n\n")
		for _, t := range v.modeTables(mode, seeds) {
			writeMDTable(bw, t, level+"# "+t.title)
		}
	}
}

// writeMDTable writes t as a GitHub table with padded columns: text left, figures right.
// heading, when not empty, is written above it.
func writeMDTable(bw *bufio.Writer, t table, heading string) {
	if heading != "" {
		bw.WriteString(heading + "\n\n")
	}
	if len(t.rows) > 0 {
		width := make([]int, len(t.head))
		for i, h := range t.head {
			width[i] = max(3, utf8.RuneCountInString(mdEscape(h)))
		}
		for _, row := range t.rows {
			for i, c := range row {
				width[i] = max(width[i], utf8.RuneCountInString(mdEscape(c)))
			}
		}
		left := func(i int) bool {
			return i == 0 || t.head[i] == "reason" || t.head[i] == "value" || t.head[i] == "why" || t.head[i] == "cancellation"
		}
		line := func(cells []string) {
			bw.WriteString("|")
			for i, c := range cells {
				c = mdEscape(c)
				pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
				if left(i) {
					bw.WriteString(" " + c + pad + " |")
				} else {
					bw.WriteString(" " + pad + c + " |")
				}
			}
			bw.WriteString("\n")
		}
		line(t.head)
		bw.WriteString("|")
		for i := range t.head {
			if left(i) {
				bw.WriteString(" " + strings.Repeat("-", width[i]) + " |")
			} else {
				bw.WriteString(" " + strings.Repeat("-", width[i]-1) + ": |")
			}
		}
		bw.WriteString("\n")
		for _, row := range t.rows {
			line(row)
		}
		bw.WriteString("\n")
	}
	if t.note != "" {
		bw.WriteString(t.note + "\n\n")
	}
}

// mdEscape keeps a cell inside its column: a "|" would end it, a newline the row.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// WriteHeadline writes the p99 table of each cancellation mode — the figures a person looks at
// first — in the same padded Markdown as WriteMarkdown, for a terminal, then how far to trust
// them: how many calls lie beyond p99 and p99.9, how far apart the seeds are, and whether the
// run is too short for its tail figures.
func WriteHeadline(w io.Writer, r sim.Report) error {
	v := newView(r)
	bw := bufio.NewWriter(w)
	if n := v.seedNote(); n != "" {
		bw.WriteString(n + "\n\n")
	}
	for _, mode := range v.modes {
		t := v.modeTables(mode, v.seeds)[0]
		writeMDTable(bw, t, "p99 latency (ms), "+modeShort(mode)+":")
	}
	if n := v.trustNote(); n != "" {
		bw.WriteString(n + "\n")
	}
	return bw.Flush()
}

// trustNote says how far the percentiles of a run can be trusted: how many calls lie beyond
// each percentile of a point, and how far apart the seeds' p99s are. A short run says so.
func (v *view) trustNote() string {
	m := v.r.Model
	if m.Calls <= 0 {
		return ""
	}
	measured := measuredCalls(m)
	if measured <= 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("How far to trust these figures: each point measured " + countCalls(measured) + ", so ")
	switch beyond99, beyond999 := measured/100, measured/1000; {
	case beyond99 == 0:
		// Fewer than 100 measured calls: the nearest rank of both percentiles is the last.
		b.WriteString("its p99 and its p99.9 are each its slowest call.")
	case beyond999 == 0:
		fmt.Fprintf(&b, "its p99 rests on %s and its p99.9 is its slowest call.", slowest(beyond99))
	default:
		fmt.Fprintf(&b, "its p99 rests on %s and its p99.9 on %s.", slowest(beyond99), slowest(beyond999))
	}
	var spreads []float64
	if len(v.seeds) > 1 {
		for _, mode := range v.modes {
			for _, s := range v.setups {
				for _, l := range v.loads {
					lo, hi, n := math.Inf(1), 0.0, 0
					for _, seed := range v.seeds {
						p := v.points[key{s, l, mode, seed}]
						if p == nil || p.Collapse || sim.IsFailed(p.P99Ms) || p.P99Ms <= 0 {
							n = -len(v.seeds)
							continue
						}
						lo, hi, n = min(lo, p.P99Ms), max(hi, p.P99Ms), n+1
					}
					if n > 1 {
						spreads = append(spreads, 100*(hi-lo)/lo)
					}
				}
			}
		}
	}
	if len(spreads) > 0 {
		fmt.Fprintf(&b, " Between seeds %s the p99 of a point differs by %s %% at the median, %s %% at most.",
			joinSeeds(v.seeds), fmtFloat(median(slices.Clone(spreads)), 1), fmtFloat(slices.Max(spreads), 1))
	} else if len(v.seeds) == 1 {
		b.WriteString(" With one seed the run cannot show how much a figure moves with the seed (add -seeds 1,2).")
	}
	if m.Clients > 1 && m.Calls/m.Clients < minCallsPerClient {
		fmt.Fprintf(&b, " **Each of the %d clients made about %d calls**: a client's policy hedges nothing until its own answers "+
			"have warmed it, so in a run this short most of them were still cold and hedging looks weaker than it is; "+
			"give -calls at least %d.", m.Clients, m.Calls/m.Clients, minCallsPerClient*m.Clients)
	}
	if measured/1000 < 100 {
		b.WriteString(" **This is a short run**: fewer than 100 calls lie beyond each p99.9, and a few bursts of " +
			"stragglers move its tail figures a lot. The reference figures (README, docs/reference) come from " +
			"200000 calls per point and seeds 1 and 2, the command's defaults.")
	}
	return b.String()
}

// minCallsPerClient is how many calls each client needs before a run says what its policies
// do warm: fleet-large (256 clients), recommended at 30 % load, seed 1, read a p99 of 174 ms
// against no hedge's 203 with 20000 calls (78 a client), 110 ms with 30000 (117), 28.5 ms with
// 50000 (195) and 26.6 ms with 100000 (390).
const minCallsPerClient = 250

// measuredCalls is how many calls each point of m measured, counted as the engine counts them
// (sim.Run leaves out the first int(WarmupFraction × Calls) by arrival): rounding the measured
// share instead said "0 calls" of a one-call run that measured one.
func measuredCalls(m sim.Model) int {
	return m.Calls - int(m.WarmupFraction*float64(m.Calls))
}

// countCalls is n calls in words: "1 call", "180 calls".
func countCalls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// slowest is the slowest n calls in words: "the slowest call", "the slowest 180 calls".
func slowest(n int) string {
	if n == 1 {
		return "the slowest call"
	}
	return fmt.Sprintf("the slowest %d calls", n)
}
