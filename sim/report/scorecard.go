package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hedgekit/hedge/sim"
)

// WriteScorecardJSON writes scorecard.json: {"setup": ..., "points": [...]}, one point per
// family × load × cancellation mode × seed with the fields of SIMULATION.md (and "payoff": true
// or false where the payoff is checked, else null). Latencies are rounded to 4 decimals; a
// latency that lands on failed calls, or of a collapsed run, is null.
func WriteScorecardJSON(w io.Writer, r sim.ScorecardResult) error {
	out := sim.ScorecardResult{Setup: r.Setup, Points: make([]sim.ScorecardPoint, len(r.Points))}
	for i, p := range r.Points {
		for _, x := range []*float64{&p.P99Ms, &p.NoHedgeP99Ms, &p.P999Ms, &p.NoHedgeP999Ms, &p.FailedPct, &p.LoadPct} {
			if !sim.IsFailed(*x) {
				*x = round(*x)
			}
		}
		out.Points[i] = p
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteScorecardMarkdown writes scorecard.md: how many points hold and pay off, the rule, then
// for each cancellation mode a table of families × loads (each cell: whether every seed holds,
// and the p99 of the setup against no hedge's for the worst seed), the payoff table, and every
// point that does not hold with why.
func WriteScorecardMarkdown(w io.Writer, r sim.ScorecardResult) error {
	bw := bufio.NewWriter(w)
	held, total := r.Held()
	paid, checked := r.Paid()
	fmt.Fprintf(bw, "# Safety scorecard: %s against no hedge\n\n", r.Setup)
	fmt.Fprintf(bw, "**Holds on %d of %d points**", held, total)
	if checked > 0 {
		fmt.Fprintf(bw, "; **payoff on %d of %d checked points**", paid, checked)
	}
	bw.WriteString(".\n\n")
	fmt.Fprintf(bw, "A point (scenario family × load × cancellation mode × seed) holds when the setup's p99 and p99.9 "+
		"are each at most %g × no hedge's + %g ms on the same family, load, mode and seed, it does not collapse, "+
		"and it fails no more calls than no hedge. Percentiles count every call: a failed call is slower than any "+
		"success, and a failed percentile against a number does not hold. The payoff check, where a family's "+
		"stragglers are at least %g %% of its service times: p99 at %s load at most %g × no hedge's.\n\n",
		sim.HoldRatio, sim.HoldSlackMs, 100*sim.PayoffMinShare, joinLoads(sim.PayoffLoads), sim.PayoffRatio)

	fams, modes, loads, seeds := scorecardAxes(r)
	head := []string{"family"}
	for _, l := range loads {
		head = append(head, fmtLoad(l))
	}
	fmt.Fprintf(bw, "Each cell: ✓ when every seed (%s) holds, ✗ when one does not; then the p99 of %s / no hedge (ms) of "+
		"the worst seed.\n\n", joinSeeds(seeds), r.Setup)
	for _, m := range modes {
		t := table{head: head}
		for _, f := range fams {
			row := []string{f}
			for _, l := range loads {
				row = append(row, mdCell(pointsAt(r, f, l, m)))
			}
			t.rows = append(t.rows, row)
		}
		writeMDTable(bw, t, "## "+modeTitle(m))
	}

	if checked > 0 {
		writeMDTable(bw, payoffTable(r, fams, modes), fmt.Sprintf("## Payoff (p99 of %s / no hedge, ms, each seed; ✓ at most %g ×)", r.Setup, sim.PayoffRatio))
	}

	var bad []sim.ScorecardPoint
	for _, p := range r.Points {
		if !p.Holds {
			bad = append(bad, p)
		}
	}
	bw.WriteString("## Points that do not hold\n\n")
	if len(bad) == 0 {
		bw.WriteString("None.\n")
	} else {
		t := table{head: []string{"family", "load", "cancellation", "seed", "failed (%)", "why"}}
		for _, p := range bad {
			t.rows = append(t.rows, []string{p.Family, fmtLoad(p.LoadPct), p.Cancellation, fmt.Sprint(p.Seed), fmtShare(p.FailedPct, 2), p.Why})
		}
		writeMDTable(bw, t, "")
	}
	return bw.Flush()
}

// scorecardAxes is what r's points range over: the families, modes and seeds in the order
// they first appear, the loads sorted.
func scorecardAxes(r sim.ScorecardResult) (fams, modes []string, loads []float64, seeds []uint64) {
	for _, p := range r.Points {
		fams = appendUnique(fams, p.Family)
		modes = appendUnique(modes, p.Cancellation)
		loads = appendUnique(loads, p.LoadPct)
		seeds = appendUnique(seeds, p.Seed)
	}
	slices.Sort(loads)
	return fams, modes, loads, seeds
}

// worstSeed is the worst of a cell's seeds (one that does not hold first, then the highest
// p99 ratio), and whether every seed holds.
func worstSeed(ps []sim.ScorecardPoint) (worst sim.ScorecardPoint, ok bool) {
	worst, ok = ps[0], true
	for _, p := range ps {
		ok = ok && p.Holds
		if (!p.Holds && worst.Holds) || (p.Holds == worst.Holds && ratio(p) > ratio(worst)) {
			worst = p
		}
	}
	return worst, ok
}

// mdCell is one family × load × mode cell of scorecard.md: whether every seed holds, then the
// worst seed's p99 against no hedge's; "" for a load not run.
func mdCell(ps []sim.ScorecardPoint) string {
	if len(ps) == 0 {
		return ""
	}
	worst, ok := worstSeed(ps)
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	return mark + " " + scoreMs(worst.P99Ms, worst.Hedged.Collapse) + " / " + scoreMs(worst.NoHedgeP99Ms, worst.NoHedge.Collapse)
}

// payoffTable is scorecard.md's payoff table: each seed's p99 against no hedge's at the
// payoff loads, for every family × mode with a checked point.
func payoffTable(r sim.ScorecardResult, fams, modes []string) table {
	ph := []string{"family", "cancellation"}
	for _, l := range sim.PayoffLoads {
		ph = append(ph, fmtLoad(l))
	}
	t := table{head: ph}
	for _, f := range fams {
		for _, m := range modes {
			row := []string{f, m}
			any := false
			for _, l := range sim.PayoffLoads {
				var cells []string
				for _, p := range pointsAt(r, f, l, m) {
					if p.Payoff == nil {
						continue
					}
					any = true
					mark := "✓"
					if !*p.Payoff {
						mark = "✗"
					}
					cells = append(cells, mark+" "+scoreMs(p.P99Ms, p.Hedged.Collapse)+" / "+scoreMs(p.NoHedgeP99Ms, p.NoHedge.Collapse))
				}
				row = append(row, strings.Join(cells, ", "))
			}
			if any {
				t.rows = append(t.rows, row)
			}
		}
	}
	return t
}

// ratio is how far a point's p99 is from no hedge's, for choosing the worst seed.
func ratio(p sim.ScorecardPoint) float64 {
	if sim.IsFailed(p.P99Ms) {
		return 1e300
	}
	if sim.IsFailed(p.NoHedgeP99Ms) || p.NoHedgeP99Ms <= 0 {
		return 0
	}
	return p.P99Ms / p.NoHedgeP99Ms
}

func scoreMs(x float64, collapse bool) string {
	if collapse {
		return collapseText
	}
	return fmtMs(x)
}

func joinLoads(ls []float64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmtLoad(l)
	}
	return strings.Join(s, " and ")
}
