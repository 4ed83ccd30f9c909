package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/hedgekit/hedge/sim"
)

// writePageHead writes the head of a self-contained page (scorecard.html, timeline.html): its
// title and its style sheet, css, then opens the body.
func writePageHead(bw *bufio.Writer, title, css string) {
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>\n%s</style></head><body>\n",
		html.EscapeString(title), css)
}

// WriteScorecardHTML writes scorecard.html: the scorecard as a picture a person takes in at a
// glance. One grid: families (rows) × loads, for each cancellation mode side by side
// (columns); each cell
// is coloured by the worst seed's p99 ratio of the setup to no hedge (green below 1, the
// darker the better; grey about even; red above the hold limit), says the ratio and the two
// p99s, and is marked ✗ with a red frame when a seed does not hold (then its reasons are in
// the cell's tooltip and in the list below the grids). The page is self-contained: no script,
// no external resource.
// It is long because it is a template: the page's style sheet and markup, in page order.
func WriteScorecardHTML(w io.Writer, r sim.ScorecardResult) error {
	bw := bufio.NewWriter(w)
	held, total := r.Held()
	paid, checked := r.Paid()
	fams, modes, loads, seeds := scorecardAxes(r)
	title := fmt.Sprintf("Safety scorecard: %s against no hedge", r.Setup)
	writePageHead(bw, title, `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
p.lead{margin:0 0 12px;color:#444}
.gap{width:14px;padding:0}
table.grid th.mode{white-space:normal;font-size:13px;padding-bottom:4px}
table.grid{border-collapse:separate;border-spacing:3px}
table.grid th{font-weight:600;padding:2px 6px;text-align:center;white-space:nowrap;font-size:13px}
table.grid th.fam{text-align:right;font-weight:500}
td.c{width:96px;height:42px;text-align:center;vertical-align:middle;border-radius:4px;border:2px solid transparent;font-size:12px;line-height:1.2}
td.c b{font-size:14px;display:block}
td.fail{border-color:#b00020}
td.none{background:#f4f4f4}
.legend{display:flex;gap:6px;align-items:center;margin:8px 0 16px;flex-wrap:wrap;font-size:12px}
.sw{display:inline-block;width:34px;height:16px;border-radius:3px;vertical-align:middle}
ul.why{font-size:12px;color:#333}
`)
	fmt.Fprintf(bw, "<h1>%s</h1>\n", html.EscapeString(title))
	fmt.Fprintf(bw, `<p class="lead"><b>Holds on %d of %d points</b>`, held, total)
	if checked > 0 {
		fmt.Fprintf(bw, `; payoff on %d of %d checked points`, paid, checked)
	}
	fmt.Fprintf(bw, ". Seeds %s. A point holds when its p99 and p99.9 are each at most %g × no hedge's + %g ms on the same "+
		"family, load, mode and seed, it does not collapse, and it fails no more calls than no hedge.</p>\n",
		joinSeeds(seeds), sim.HoldRatio, sim.HoldSlackMs)
	bw.WriteString(`<p class="lead">Each cell is the worst of the seeds: the p99 of ` + html.EscapeString(r.Setup) +
		` divided by no hedge's (big number), then both p99s in ms. Hover a cell for every seed.</p>` + "\n")
	writeLegend(bw)
	// One table, the modes side by side: a family's row reads across both, so the effect of
	// cancellation reaching the server is seen at a glance.
	bw.WriteString(`<table class="grid"><tr><th></th>`)
	for i, m := range modes {
		if i > 0 {
			bw.WriteString(`<th class="gap"></th>`)
		}
		fmt.Fprintf(bw, `<th class="mode" colspan="%d">%s</th>`, len(loads), html.EscapeString(modeTitle(m)))
	}
	bw.WriteString("</tr>\n<tr><th class=\"fam\">load</th>")
	for i := range modes {
		if i > 0 {
			bw.WriteString(`<th class="gap"></th>`)
		}
		for _, l := range loads {
			fmt.Fprintf(bw, `<th>%s</th>`, html.EscapeString(fmtLoad(l)))
		}
	}
	bw.WriteString("</tr>\n")
	for _, f := range fams {
		fmt.Fprintf(bw, `<tr><th class="fam">%s</th>`, html.EscapeString(f))
		for i, m := range modes {
			if i > 0 {
				bw.WriteString(`<td class="gap"></td>`)
			}
			for _, l := range loads {
				writeCell(bw, pointsAt(r, f, l, m))
			}
		}
		bw.WriteString("</tr>\n")
	}
	bw.WriteString("</table>\n")
	var fails []sim.ScorecardPoint
	for _, p := range r.Points {
		if !p.Holds {
			fails = append(fails, p)
		}
	}
	fmt.Fprintf(bw, "<h2>Points that do not hold (%d)</h2>\n", len(fails))
	if len(fails) == 0 {
		bw.WriteString("<p>None.</p>\n")
	} else {
		bw.WriteString(`<ul class="why">` + "\n")
		for _, p := range fails {
			fmt.Fprintf(bw, "<li>%s, %s load, cancellation %s, seed %d: %s</li>\n", html.EscapeString(p.Family),
				html.EscapeString(fmtLoad(p.LoadPct)), html.EscapeString(p.Cancellation), p.Seed, html.EscapeString(p.Why))
		}
		bw.WriteString("</ul>\n")
	}
	bw.WriteString("</body></html>\n")
	return bw.Flush()
}

func pointsAt(r sim.ScorecardResult, f string, l float64, m string) []sim.ScorecardPoint {
	var ps []sim.ScorecardPoint
	for _, p := range r.Points {
		if p.Family == f && p.LoadPct == l && p.Cancellation == m {
			ps = append(ps, p)
		}
	}
	return ps
}

// writeCell writes one family × load × mode cell: the worst seed (one that does not hold
// first, then the highest p99 ratio), coloured by its ratio.
func writeCell(bw *bufio.Writer, ps []sim.ScorecardPoint) {
	if len(ps) == 0 {
		bw.WriteString(`<td class="c none" title="not run at this load">–</td>`)
		return
	}
	worst, ok := worstSeed(ps)
	var tips []string
	for _, p := range ps {
		tip := fmt.Sprintf("seed %d: p99 %s / %s ms, p99.9 %s / %s ms", p.Seed,
			scoreMs(p.P99Ms, p.Hedged.Collapse), scoreMs(p.NoHedgeP99Ms, p.NoHedge.Collapse),
			scoreMs(p.P999Ms, p.Hedged.Collapse), scoreMs(p.NoHedgeP999Ms, p.NoHedge.Collapse))
		if !p.Holds {
			tip += " — does not hold: " + p.Why
		}
		tips = append(tips, tip)
	}
	class, mark := "c", ""
	if !ok {
		class, mark = "c fail", "✗ "
	}
	var rt float64
	var label string
	switch {
	case sim.IsFailed(worst.P99Ms) || worst.Hedged.Collapse:
		rt, label = math.Inf(1), "failed"
	case sim.IsFailed(worst.NoHedgeP99Ms) || worst.NoHedgeP99Ms <= 0:
		rt, label = 0, "no hedge failed" // a number against failures: better than any ratio
	default:
		rt = worst.P99Ms / worst.NoHedgeP99Ms
		label = fmt.Sprintf("%.2f×", rt)
	}
	bg, fg := ratioColour(rt)
	broken := ""
	if !worst.Holds {
		// The colour is the p99's; a point can fail on its p99.9 or its failures alone, so
		// the cell says which rules it broke.
		broken = `<br><i>` + html.EscapeString(brokenRules(worst.Why)) + `</i>`
	}
	fmt.Fprintf(bw, `<td class="%s" style="background:%s;color:%s" title="%s"><b>%s%s</b>%s / %s%s</td>`,
		class, bg, fg, html.EscapeString(strings.Join(tips, "\n")), mark, label,
		scoreMs(worst.P99Ms, worst.Hedged.Collapse), scoreMs(worst.NoHedgeP99Ms, worst.NoHedge.Collapse), broken)
}

// brokenRules names, briefly, the rules a point's why says it broke: "p99", "p99.9",
// "collapse", "failures".
func brokenRules(why string) string {
	var rules []string
	for _, part := range strings.Split(why, "; ") {
		switch {
		case strings.HasPrefix(part, "collapse"):
			rules = append(rules, "collapse")
		case strings.HasPrefix(part, "p99.9 "):
			rules = append(rules, "p99.9")
		case strings.HasPrefix(part, "p99 "):
			rules = append(rules, "p99")
		case strings.HasPrefix(part, "failed calls"):
			rules = append(rules, "failures")
		}
	}
	return "breaks " + strings.Join(rules, ", ")
}

// ratioColour is a cell's background and text colours for a p99 ratio: greens from 0.1× (dark)
// to 1× (pale), grey up to the hold limit, reds beyond it; a failed or collapsed p99 is dark red.
func ratioColour(rt float64) (bg, fg string) {
	switch {
	case math.IsInf(rt, 0) || math.IsNaN(rt):
		return "#7f0000", "#fff"
	case rt <= 1:
		// log scale: 0.1× → 1, 1× → 0
		t := math.Min(1, math.Max(0, -math.Log10(math.Max(rt, 0.1))))
		r := int(235 - t*(235-27))
		g := int(245 - t*(245-120))
		b := int(235 - t*(235-55))
		fg = "#111"
		if t > 0.55 {
			fg = "#fff"
		}
		return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b), fg
	case rt <= sim.HoldRatio:
		return "#e6e6e6", "#111"
	default:
		t := math.Min(1, (rt-sim.HoldRatio)/(2-sim.HoldRatio))
		r := int(250 - t*(250-190))
		g := int(200 - t*(200-30))
		b := int(200 - t*(200-40))
		fg = "#111"
		if t > 0.5 {
			fg = "#fff"
		}
		return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b), fg
	}
}

func writeLegend(bw *bufio.Writer) {
	bw.WriteString(`<div class="legend">p99 ratio to no hedge:`)
	for _, s := range []struct {
		rt    float64
		label string
	}{{0.1, "0.1×"}, {0.25, "0.25×"}, {0.5, "0.5×"}, {0.9, "0.9×"}, {1.02, "≈1×"}, {1.3, "1.3×"}, {2, "≥2×"}, {math.Inf(1), "failed"}} {
		bg, _ := ratioColour(s.rt)
		fmt.Fprintf(bw, `<span><span class="sw" style="background:%s"></span> %s</span>`, bg, s.label)
	}
	bw.WriteString(`<span><span class="sw" style="border:2px solid #b00020;box-sizing:border-box"></span> ✗ a seed does not hold (the rules it breaks below the figures)</span>` +
		`<span><span class="sw" style="background:#f4f4f4;text-align:center">–</span> not run: beyond the load the family is provisioned for</span></div>` + "\n")
}
