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

// WriteHTML writes report.html: one self-contained page (no external assets, no JavaScript) with
// the model's parameters, a line chart of p99 and of p99.9 against load for each cancellation
// mode (one line per setup), and under the charts the same tables as WriteMarkdown.
//
// The charts share one logarithmic latency axis so the modes can be compared by eye. A collapsed
// point is drawn as an "×" in a band marked "collapse" above the plot, and a value above the
// axis (capped at 100 s) as a triangle on the top edge with its figure, so neither squashes the rest;
// a percentile that lands on failed calls is a triangle on the top edge marked "failed".
// Each setup has its own colour and its own dash pattern and marker, so lines stay apart in print
// and for readers who do not tell the colours apart. Hovering a point shows its figure.
func WriteHTML(w io.Writer, r sim.Report) error {
	v := newView(r)
	bw := bufio.NewWriter(w)
	bw.WriteString(htmlHead)
	bw.WriteString("<h1>Hedging simulation</h1>\n")
	bw.WriteString("<p>What hedging does to the tail when every attempt waits in the same queue.</p>\n")
	if rows := v.modelRows(); len(rows) > 0 {
		bw.WriteString("<table class=\"model\">\n")
		for _, r := range rows {
			fmt.Fprintf(bw, "<tr><th>%s</th><td>%s</td></tr>\n", esc(r[0]), esc(r[1]))
		}
		bw.WriteString("</table>\n")
	}
	bw.WriteString("<p>Latencies are in milliseconds. <b>collapse</b>: the queue never drained — the load, " +
		"with its hedges and retries, was more than the workers serve, and latency grew for as long as the " +
		"run lasted — so the point has no meaningful percentiles. " + strings.ReplaceAll(strings.ReplaceAll(esc(failedNote), "**failed**", "<b>failed</b>"), "**", "") + " " + inlineCode(esc(scorecardNote)))
	if n := v.seedNote(); n != "" {
		bw.WriteString(" " + esc(n) + " The charts show the same medians.")
	}
	bw.WriteString("</p>\n")

	lo, hi := v.latencyRange()
	bw.WriteString("<div class=\"charts\">\n")
	for _, metric := range []struct {
		name string
		f    func(cell) float64
	}{
		{"p99", func(c cell) float64 { return c.p99 }},
		{"p99.9", func(c cell) float64 { return c.p999 }},
	} {
		for _, mode := range v.modes {
			if len(v.loads) == 0 {
				break // nothing to put on the x axis
			}
			ch := chart{
				title: metric.name + " latency against load — " + modeShort(mode),
				label: metric.name,
				loads: v.loads,
				lo:    lo,
				hi:    hi,
			}
			for _, s := range v.setups {
				sr := series{name: s}
				has := false
				for _, l := range v.loads {
					c := v.cell(s, l, mode, v.seeds)
					y := math.NaN()
					if c.n > 0 {
						has = true
						y = metric.f(c)
					}
					sr.ys = append(sr.ys, y)
					sr.collapse = append(sr.collapse, c.n > 0 && c.collapse)
				}
				if has {
					ch.series = append(ch.series, sr)
				}
			}
			bw.WriteString("<figure>\n")
			ch.write(bw)
			bw.WriteString("</figure>\n")
		}
	}
	bw.WriteString("</div>\n")

	for _, mode := range v.modes {
		fmt.Fprintf(bw, "<h2>%s</h2>\n", esc(modeTitle(mode)))
		for _, t := range v.modeTables(mode, v.seeds) {
			writeHTMLTable(bw, t)
		}
	}
	bw.WriteString("</body>\n</html>\n")
	return bw.Flush()
}

const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hedging simulation</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #1a1a1a; max-width: 1400px; }
h1 { font-size: 24px; margin: 0 0 8px; }
h2 { font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
p { max-width: 75em; line-height: 1.4; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text, th.text { text-align: left; }
table.model th { text-align: left; }
td.collapse { color: #b00000; font-weight: bold; }
td.failed { color: #7a0099; font-weight: bold; }
td.marked { color: #8a4b00; }
p.note { font-size: 13px; color: #444; margin: 0 0 8px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
figure { margin: 0; border: 1px solid #ddd; padding: 4px; }
svg { width: 100%; height: auto; display: block; }
</style>
</head>
<body>
`

// writeHTMLTable writes t with its title as a heading; text columns left, figures right.
func writeHTMLTable(bw *bufio.Writer, t table) {
	fmt.Fprintf(bw, "<h3>%s</h3>\n", esc(t.title))
	if len(t.rows) > 0 {
		isText := func(i int) bool { return i == 0 || t.head[i] == "reason" }
		bw.WriteString("<table>\n<tr>")
		for i, h := range t.head {
			cls := "num"
			if isText(i) {
				cls = "text"
			}
			fmt.Fprintf(bw, "<th class=\"%s\">%s</th>", cls, esc(h))
		}
		bw.WriteString("</tr>\n")
		for _, row := range t.rows {
			bw.WriteString("<tr>")
			for i, c := range row {
				cls := "num"
				switch {
				case isText(i):
					cls = "text"
				case c == collapseText:
					cls = "num collapse"
				case c == failedText:
					cls = "num failed"
				case strings.HasSuffix(c, collapseMark):
					cls = "num marked"
				}
				fmt.Fprintf(bw, "<td class=\"%s\">%s</td>", cls, esc(c))
			}
			bw.WriteString("</tr>\n")
		}
		bw.WriteString("</table>\n")
	}
	if t.note != "" {
		fmt.Fprintf(bw, "<p class=\"note\">%s</p>\n", inlineCode(esc(t.note)))
	}
}

func esc(s string) string { return html.EscapeString(s) }

// inlineCode turns Markdown `code` spans of an escaped string into <code> elements.
func inlineCode(s string) string {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 { // unbalanced: leave it alone
		return s
	}
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			b.WriteString("<code>" + p + "</code>")
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}

// maxAxisMs and offScale cap the latency axis (see latencyRange); values above the axis are drawn
// off the scale (see WriteHTML).
const (
	maxAxisMs = 100_000
	offScale  = 20
)

// latencyRange is the latency axis shared by every chart: from the smallest to the largest p99 or
// p99.9 of a point that did not collapse, widened to 1-2-5 values and to at least a factor of 10.
// The top is capped at offScale × the median of those values (and at maxAxisMs), so that one
// extreme point near collapse does not squash every other line into the bottom of the chart; the
// chart draws such a point off the scale with its figure.
func (v *view) latencyRange() (lo, hi float64) {
	var ys []float64
	for _, mode := range v.modes {
		for _, s := range v.setups {
			for _, l := range v.loads {
				c := v.cell(s, l, mode, v.seeds)
				if c.n == 0 || c.collapse {
					continue
				}
				for _, y := range []float64{c.p99, c.p999} {
					if y > 0 && !math.IsInf(y, 0) {
						ys = append(ys, y)
					}
				}
			}
		}
	}
	if len(ys) == 0 { // nothing to draw: any sensible axis
		return 10, 1000
	}
	lo, hi = slices.Min(ys), slices.Max(ys)
	lo, hi = niceFloor(lo), niceCeil(min(hi, offScale*median(ys), maxAxisMs))
	for hi/lo < 9.999 {
		hi = niceCeil(hi * 1.01)
		if hi/lo < 9.999 {
			lo = niceFloor(lo * 0.99)
		}
	}
	return lo, hi
}

// niceFloor is the largest 1, 2 or 5 × 10^k that is <= x (x > 0).
func niceFloor(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= x*(1+1e-9) {
			return m * p
		}
	}
	return p / 2
}

// niceCeil is the smallest 1, 2 or 5 × 10^k that is >= x (x > 0).
func niceCeil(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// logTicks are the 1, 2, 5 × 10^k values in [lo, hi].
func logTicks(lo, hi float64) []float64 {
	var ts []float64
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi*(1+1e-9); p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if t := m * p; t >= lo*(1-1e-9) && t <= hi*(1+1e-9) {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

// Line styles. Colours are the Okabe–Ito palette (distinguishable with the common colour-vision
// deficiencies) plus three; the dash patterns and markers differ too, so that each setup is
// told apart by more than its colour.
var (
	lineColours = []string{"#000000", "#E69F00", "#0072B2", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#7F7F7F", "#8C564B", "#6A3D9A"}
	lineDashes  = []string{"", "9 4", "2 3", "10 3 2 3", "5 4", "12 3 3 3 3 3", "1 3", "6 2 2 2", "14 5", "3 2 8 2"}
	markers     = []string{"circle", "square", "triangle", "diamond", "down", "ocircle", "osquare", "otriangle", "odiamond", "odown"}
)

// style is series i's colour, dash pattern and marker. A chart holds more series than there
// are colours (the default run has 13 setups), and taking each list modulo its length gave
// series 10 the very style of series 0: "server-assisted" was drawn, and listed in the legend,
// exactly as "no hedge". Each round of the colours shifts the dash and the marker by one, so
// series i and i+10 share a colour but neither its dash nor its marker, and no two of the
// first 100 series look alike.
func style(i int) (colour, dash, marker string) {
	shift := i + i/len(lineColours)
	return lineColours[i%len(lineColours)], lineDashes[shift%len(lineDashes)], markers[shift%len(markers)]
}

type series struct {
	name     string
	ys       []float64 // one per load; NaN = no point
	collapse []bool    // one per load
}

type chart struct {
	title  string
	label  string // the metric, for tooltips: "p99"
	loads  []float64
	lo, hi float64
	series []series
}

// Chart geometry, in SVG user units.
const (
	chartW      = 600.0
	plotLeft    = 66.0
	plotRight   = 584.0
	bandTop     = 36.0 // the "collapse" band
	bandBottom  = 56.0
	plotTop     = 66.0
	plotBottom  = 336.0
	legendTop   = 396.0
	legendLeft  = 24.0
	legendRow   = 19.0
	legendLineW = 34.0
	charW       = 5.9 // a generous width of one character at font-size 11
)

// fmtDuration formats milliseconds briefly: "850 ms", "12.5 s", "250 s".
func fmtDuration(ms float64) string {
	switch {
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case ms < 100_000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(ms/1000, 'f', 0, 64) + " s"
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// fmtTick formats a tick value in ms: "10", "200", "5000".
func fmtTick(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// write writes the chart as an SVG: the title, the frame and axes, each setup's series, and
// the legend.
func (c *chart) write(bw *bufio.Writer) {
	n := len(c.series)
	maxName := 0
	for _, s := range c.series {
		maxName = max(maxName, len([]rune(s.name)))
	}
	colW := legendLineW + 10 + charW*float64(maxName) + 18
	cols := max(1, int((chartW-legendLeft)/colW))
	rows := (n + cols - 1) / cols
	height := legendTop + float64(rows)*legendRow + 6

	fmt.Fprintf(bw, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %s %s\" role=\"img\" aria-label=\"%s\" font-family=\"system-ui, Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
		f1(chartW), f1(height), esc(c.title))
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"22\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
		f1((plotLeft+plotRight)/2), esc(c.title))

	// x scale: the loads, padded so the end markers do not sit on the axes.
	xmin, xmax := c.loads[0], c.loads[len(c.loads)-1]
	pad := (xmax - xmin) * 0.05
	if pad == 0 {
		pad = 10
	}
	xmin, xmax = xmin-pad, xmax+pad
	xOf := func(l float64) float64 { return plotLeft + (l-xmin)/(xmax-xmin)*(plotRight-plotLeft) }
	// The axis reaches a little beyond lo and hi, so that points on them do not sit on the frame
	// and an off-scale "▲" on the top edge is above the highest grid line.
	llo, lhi := math.Log10(c.lo/1.12), math.Log10(c.hi*1.12)
	yOf := func(v float64) float64 {
		return plotBottom - (math.Log10(v)-llo)/(lhi-llo)*(plotBottom-plotTop)
	}

	c.writeFrame(bw, xOf, yOf)
	for i, s := range c.series {
		c.writeSeries(bw, i, s, xOf, yOf)
	}
	// Legend: line sample with marker, then the setup's name, in as many columns as fit.
	for i, s := range c.series {
		colour, dash, mk := style(i)
		col, row := i%cols, i/cols
		x := legendLeft + float64(col)*colW
		y := legendTop + float64(row)*legendRow
		dashAttr := ""
		if dash != "" {
			dashAttr = " stroke-dasharray=\"" + dash + "\""
		}
		fmt.Fprintf(bw, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" stroke-width=\"2\"%s/>",
			f1(x), f1(y), f1(x+legendLineW), f1(y), colour, dashAttr)
		writeMarker(bw, mk, x+legendLineW/2, y, colour)
		fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">%s</text>\n", f1(x+legendLineW+8), f1(y+4), esc(s.name))
	}
	bw.WriteString("</svg>\n")
}

// writeFrame writes the collapse band, the grid, the ticks and the axes with their labels.
func (c *chart) writeFrame(bw *bufio.Writer, xOf, yOf func(float64) float64) {
	// Collapse band.
	fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#fbe3e3\"/>\n",
		f1(plotLeft), f1(bandTop), f1(plotRight-plotLeft), f1(bandBottom-bandTop))
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\" fill=\"#b00000\" font-weight=\"bold\">collapse</text>\n",
		f1(plotLeft-6), f1((bandTop+bandBottom)/2+4))

	// Grid, ticks and axes.
	bw.WriteString("<g stroke=\"#e2e2e2\" stroke-width=\"1\">\n")
	ticks := logTicks(c.lo, c.hi)
	for _, t := range ticks {
		fmt.Fprintf(bw, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", f1(plotLeft), f1(yOf(t)), f1(plotRight), f1(yOf(t)))
	}
	for _, l := range c.loads {
		fmt.Fprintf(bw, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", f1(xOf(l)), f1(plotTop), f1(xOf(l)), f1(plotBottom))
	}
	bw.WriteString("</g>\n")
	fmt.Fprintf(bw, "<path d=\"M%s %sV%sH%s\" fill=\"none\" stroke=\"#333\"/>\n", f1(plotLeft), f1(plotTop), f1(plotBottom), f1(plotRight))
	bw.WriteString("<g text-anchor=\"end\" fill=\"#333\">\n")
	labelEvery := 1
	if math.Log10(c.hi/c.lo) > 3.01 { // many decades: label only the powers of 10
		labelEvery = 3
	}
	for _, t := range ticks {
		m := t / math.Pow(10, math.Floor(math.Log10(t)+1e-9))
		if labelEvery == 3 && math.Abs(m-1) > 1e-6 {
			continue
		}
		fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">%s</text>\n", f1(plotLeft-6), f1(yOf(t)+4), fmtTick(t))
	}
	bw.WriteString("</g>\n<g text-anchor=\"middle\" fill=\"#333\">\n")
	for _, l := range c.loads {
		fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">%s</text>\n", f1(xOf(l)), f1(plotBottom+16), esc(fmtLoad(l)))
	}
	bw.WriteString("</g>\n")
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" fill=\"#333\">load without hedges (%% of worker capacity)</text>\n",
		f1((plotLeft+plotRight)/2), f1(plotBottom+36))
	fmt.Fprintf(bw, "<text transform=\"translate(16 %s) rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">%s latency, ms (log scale)</text>\n",
		f1((plotTop+plotBottom)/2), esc(c.label))
}

// writeSeries writes setup i's series: one path (broken where a load has no point), then its
// markers.
func (c *chart) writeSeries(bw *bufio.Writer, i int, s series, xOf, yOf func(float64) float64) {
	n := len(c.series)
	colour, dash, mk := style(i)
	dx := (float64(i) - float64(n-1)/2) * 2.5 // a small dodge so identical points stay visible
	pts := c.points(s, dx, xOf, yOf)
	var d strings.Builder
	pen := false
	for _, p := range pts {
		if !p.hasPoint {
			pen = false
			continue
		}
		if pen {
			d.WriteString("L")
		} else {
			d.WriteString("M")
		}
		d.WriteString(f1(p.x) + " " + f1(p.y))
		pen = true
	}
	dashAttr := ""
	if dash != "" {
		dashAttr = " stroke-dasharray=\"" + dash + "\""
	}
	fmt.Fprintf(bw, "<g class=\"setup\" data-setup=\"%s\">\n", esc(s.name))
	if d.Len() > 0 {
		fmt.Fprintf(bw, "<path class=\"series\" d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"%s/>\n",
			d.String(), colour, dashAttr)
	}
	for _, p := range pts {
		if !p.hasPoint {
			continue
		}
		tip := s.name + ", " + fmtLoad(p.load) + ": "
		switch p.kind {
		case 2:
			tip += collapseText
		case 3:
			tip += c.label + " " + failedText + " (lands on failed calls)"
		default:
			tip += c.label + " " + fmtMs(p.value) + " ms"
		}
		fmt.Fprintf(bw, "<g><title>%s</title>", esc(tip))
		switch p.kind {
		case 2:
			writeCross(bw, p.x, p.y, colour)
		case 1, 3:
			tx, anchor := p.x+7, "start"
			if p.x > (plotLeft+plotRight)/2 {
				tx, anchor = p.x-7, "end"
			}
			label := failedText
			if p.kind == 1 {
				label = fmtDuration(p.value)
			}
			fmt.Fprintf(bw, "<path d=\"M%s %sl5 8h-10z\" fill=\"%s\"/><text x=\"%s\" y=\"%s\" text-anchor=\"%s\" font-size=\"10\" fill=\"%s\">%s</text>",
				f1(p.x), f1(p.y-4), colour, f1(tx), f1(p.y+5), anchor, colour, esc(label))
		default:
			writeMarker(bw, mk, p.x, p.y, colour)
		}
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</g>\n")
}

// writeMarker draws a point marker of the given shape; shapes starting with "o" are hollow.
func writeMarker(bw *bufio.Writer, shape string, x, y float64, colour string) {
	fill := colour
	if strings.HasPrefix(shape, "o") {
		fill, shape = "#ffffff", shape[1:]
	}
	attrs := fmt.Sprintf(" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"", fill, colour)
	switch shape {
	case "circle":
		fmt.Fprintf(bw, "<circle cx=\"%s\" cy=\"%s\" r=\"3.5\"%s/>", f1(x), f1(y), attrs)
	case "square":
		fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"7\" height=\"7\"%s/>", f1(x-3.5), f1(y-3.5), attrs)
	case "triangle":
		fmt.Fprintf(bw, "<path d=\"M%s %sl4.5 7.5h-9z\"%s/>", f1(x), f1(y-4.5), attrs)
	case "diamond":
		fmt.Fprintf(bw, "<path d=\"M%s %sl4.5 4.5l-4.5 4.5l-4.5-4.5z\"%s/>", f1(x), f1(y-4.5), attrs)
	case "down":
		fmt.Fprintf(bw, "<path d=\"M%s %sl4.5-7.5h-9z\"%s/>", f1(x), f1(y+4.5), attrs)
	}
}

// writeCross draws the "×" of a collapsed point.
func writeCross(bw *bufio.Writer, x, y float64, colour string) {
	fmt.Fprintf(bw, "<path d=\"M%s %sl9 9M%s %sl-9 9\" stroke=\"%s\" stroke-width=\"2.5\" stroke-linecap=\"round\"/>",
		f1(x-4.5), f1(y-4.5), f1(x+4.5), f1(y-4.5), colour)
}

// plotPoint is where one load's figure of a series goes on the chart.
type plotPoint struct {
	x, y     float64
	kind     int // 0 on scale, 1 off the top, 2 collapse, 3 failed
	value    float64
	load     float64
	hasPoint bool
}

// points places series s's figures on the chart, dodged by dx.
func (c *chart) points(s series, dx float64, xOf, yOf func(float64) float64) []plotPoint {
	pts := make([]plotPoint, len(c.loads))
	for j, l := range c.loads {
		p := plotPoint{x: xOf(l) + dx, load: l}
		switch y := s.ys[j]; {
		case s.collapse[j]:
			p.hasPoint, p.kind, p.y = true, 2, (bandTop+bandBottom)/2
		case math.IsNaN(y):
		case sim.IsFailed(y):
			p.hasPoint, p.kind, p.y = true, 3, plotTop
		case y > c.hi:
			p.hasPoint, p.kind, p.y, p.value = true, 1, plotTop, y
		default:
			p.hasPoint, p.value = true, y
			p.y = yOf(max(y, c.lo))
		}
		pts[j] = p
	}
	return pts
}
