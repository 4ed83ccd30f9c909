package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hedgekit/hedge/sim"
)

// Colours of the timeline's series, from the Okabe–Ito palette the report's charts use.
const (
	colourSlow   = "#D55E00" // calls over the slow mark, or failed
	colourHedges = "#0072B2" // hedges sent
	colourWon    = "#009E73" // hedges won
)

// WriteTimelineHTML writes timeline.html: for each timeline, one chart of its seconds, with the
// calls slower than the timeline's mark or failed, the hedges sent and the hedges won in each, on one
// logarithmic scale, every chart with the same time axis, so that a burst of hedges lines up with the slow
// seconds it starts (or does not). Each chart's points carry their second's figures as a
// tooltip, the gates' refusals among them. The page is self-contained: no script, no external
// resource.
func WriteTimelineHTML(w io.Writer, tls []sim.Timeline) error {
	bw := bufio.NewWriter(w)
	title := "Timeline"
	if len(tls) > 0 {
		t := tls[0]
		title = fmt.Sprintf("Timeline: %g %% load, cancellation %s, seed %d", t.LoadPct, t.Cancellation, t.Seed)
	}
	writePageHead(bw, title, `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 4px}
p.lead{margin:0 0 12px;color:#444}
.key span{display:inline-block;width:18px;height:3px;vertical-align:middle;margin:0 4px 0 12px}
svg text{font-size:11px;fill:#444}
`)
	fmt.Fprintf(bw, "<h1>%s</h1>\n", html.EscapeString(title))
	seconds, top := 0, 1
	for _, t := range tls {
		seconds = max(seconds, len(t.Seconds))
		for _, s := range t.Seconds {
			top = max(top, s.Slow, s.Hedges)
		}
	}
	slowMark := ""
	if len(tls) > 0 {
		slowMark = strconv.FormatFloat(tls[0].SlowAfterMs, 'f', -1, 64) + " ms"
	}
	fmt.Fprintf(bw, `<p class="lead">Each second of virtual time, every call counted (the warm-up's too). `+
		`<span class="key"><span style="background:%s"></span>calls over %s or failed<span style="background:%s"></span>hedges sent`+
		`<span style="background:%s"></span>hedges won</span>. Hover a point for its second's calls, p99 and refusals.</p>`+"\n",
		colourSlow, html.EscapeString(slowMark), colourHedges, colourWon)
	for _, t := range tls {
		fmt.Fprintf(bw, "<h2>%s</h2>\n<p class=\"lead\">p99 %s</p>\n", html.EscapeString(TimelineName(t)), timelineP99(t))
		writeTimelineChart(bw, t, seconds, top)
	}
	bw.WriteString("</body></html>\n")
	return bw.Flush()
}

// writeTimelineChart draws one timeline: seconds across, counts up, to the common scale.
func writeTimelineChart(bw *bufio.Writer, t sim.Timeline, seconds, top int) {
	const w, h, left, bottom, pad = 1100.0, 180.0, 48.0, 24.0, 8.0
	xOf := func(i int) float64 { return left + (w-left-pad)*float64(i)/float64(max(seconds-1, 1)) }
	// Counts on a logarithmic scale (of 1 + the count), so that ten hedges a second and a
	// burst of a hundred read apart beside a thousand slow calls.
	scale := math.Log10(1 + float64(top))
	yOf := func(v int) float64 { return pad + (h-bottom-pad)*(1-math.Log10(1+float64(v))/scale) }
	fmt.Fprintf(bw, `<svg viewBox="0 0 %g %g" width="100%%" role="img" aria-label="%s">`+"\n", w, h, html.EscapeString(t.Setup))
	// Axes: counts at 0, 1, 10, 100…; seconds every tenth of the run.
	for v := 0; v <= top; v = max(v*10, 1) {
		y := yOf(v)
		fmt.Fprintf(bw, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%d</text>`+"\n",
			left, y, w-pad, y, left-4, y+4, v)
	}
	step := max(seconds/10, 1)
	for i := 0; i < seconds; i += step {
		fmt.Fprintf(bw, `<text x="%.1f" y="%g" text-anchor="middle">%d s</text>`+"\n", xOf(i), h-6, i)
	}
	for _, s := range []struct {
		colour string
		of     func(sim.Second) int
	}{
		{colourSlow, func(s sim.Second) int { return s.Slow }},
		{colourHedges, func(s sim.Second) int { return s.Hedges }},
		{colourWon, func(s sim.Second) int { return s.Won }},
	} {
		var pts strings.Builder
		for i, sec := range t.Seconds {
			fmt.Fprintf(&pts, "%.1f,%.1f ", xOf(i), yOf(s.of(sec)))
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", s.colour, strings.TrimSpace(pts.String()))
	}
	// One invisible band per second, holding its tooltip.
	bandW := (w - left - pad) / float64(max(seconds, 1))
	for i, sec := range t.Seconds {
		fmt.Fprintf(bw, `<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="transparent"><title>%s</title></rect>`+"\n",
			xOf(i)-bandW/2, pad, bandW, h-bottom-pad, html.EscapeString(secondTooltip(i, sec)))
	}
	bw.WriteString("</svg>\n")
}

// secondTooltip is one second's figures in words.
func secondTooltip(i int, s sim.Second) string {
	var b strings.Builder
	fmt.Fprintf(&b, "second %d: %d calls, %d failed, %d slow, p99 %s; %d hedges sent, %d won", i, s.Calls, s.Failed, s.Slow, msText(s.P99Ms), s.Hedges, s.Won)
	if len(s.Refused) > 0 {
		b.WriteString("; refused: " + refusals(s))
	}
	return b.String()
}

// TimelineName is a timeline's setup, with its balancer when it has one.
func TimelineName(tl sim.Timeline) string {
	if tl.Balancer == "" {
		return tl.Setup
	}
	return tl.Setup + " · " + tl.Balancer
}

// WriteTimelineMarkdown writes timeline.md: one table per timeline, a row per second.
func WriteTimelineMarkdown(w io.Writer, tls []sim.Timeline) error {
	bw := bufio.NewWriter(w)
	if len(tls) > 0 {
		// Without it, a second whose "won" exceeds its "hedges" read as a miscount.
		fmt.Fprintf(bw, "Each row is one second of the run, the warm-up's included: the calls that ended in it (failed, "+
			"and slower than %g ms, failed ones among them, and their p99), the hedges sent in it, the hedges that "+
			"answered first in it (one sent late in a second may win in the next, so won can exceed hedges), and the "+
			"hedges the gates refused in it, by reason.\n\n", tls[0].SlowAfterMs)
	}
	for i, tl := range tls {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "## %s\n\n%g %% load, cancellation %s, seed %d: p99 %s\n\n", mdEscape(TimelineName(tl)), tl.LoadPct, tl.Cancellation, tl.Seed, timelineP99(tl))
		fmt.Fprintf(bw, "| second | calls | failed | over %g ms (failed among them) | p99 (ms) | hedges | won | refused |\n", tl.SlowAfterMs)
		fmt.Fprintln(bw, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		for k, s := range tl.Seconds {
			fmt.Fprintf(bw, "| %d | %d | %d | %d | %s | %d | %d | %s |\n", k, s.Calls, s.Failed, s.Slow, fmtMs(s.P99Ms), s.Hedges, s.Won, refusals(s))
		}
	}
	return bw.Flush()
}

// refusals is a second's refusals, by reason in the order of their names: "backlog 3, cold 1".
func refusals(s sim.Second) string {
	reasons := make([]string, 0, len(s.Refused))
	for r, n := range s.Refused {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	slices.Sort(reasons)
	return strings.Join(reasons, ", ")
}

// msText is a latency figure in words: "12.3 ms", or "failed".
// timelineP99 is a timeline's p99 as text: "collapse" for a run that collapsed, which has
// none.
func timelineP99(t sim.Timeline) string {
	if t.Collapse {
		return "collapse"
	}
	return msText(t.P99Ms)
}

func msText(ms float64) string {
	if sim.IsFailed(ms) {
		return failedText
	}
	return fmtMs(ms) + " ms"
}
