// Package report writes a [sim.Report] as the files a person or a script reads: report.json
// (every figure, for scripts), report.md (tables for a terminal or GitHub) and report.html
// (one self-contained page with charts and the same tables).
//
// Every writer is deterministic: the same Report gives byte-identical output. Nothing depends on
// the clock, on map iteration order, or on the machine, so a report can be committed and diffed.
//
// # Several seeds
//
// The Markdown and HTML writers show one figure per setup × load × cancellation mode: the median
// across seeds (for two seeds, their mean). A latency cell reads "collapse" when any seed
// collapsed at that point, because a point that collapses for one seed is not safe to run at.
// [WriteMarkdownTables] writes the tables of a single seed, for documentation that quotes one run.
//
// The writers are plain functions with no state; they are safe for concurrent use as long as the
// Report is not modified while they run.
package report

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hedgekit/hedge/sim"
)

// collapseText is what a latency cell shows for a collapsed point. Scripts and tests look for it.
const collapseText = "collapse"

// failedText is what a latency cell shows when the percentile lands on failed calls: a failed
// call counts as slower than any success (sim.Failed).
const failedText = "failed"

// failedNote explains how failed calls enter the latency figures.
const failedNote = "Every percentile counts every call: a failed call (rejected by the adaptive limit, " +
	"refused by an open breaker, or every attempt failed) is slower than any success, and a percentile " +
	"that lands on failed calls reads **failed**."

// scorecardNote points from a report, which shows one service model, to the scorecard, which
// says where a setup is safe across many.
const scorecardNote = "One model shows what a setup does to one service; whether it is safe across services " +
	"(stragglers, workers, clients, bursts, brownouts, replicas, failures) is what `hedgesim -scorecard -setups NAME` " +
	"judges against no hedge."

// key identifies one point of a sweep.
type key struct {
	setup string
	load  float64
	mode  string
	seed  uint64
}

// view is a Report indexed for the writers, with the axes in a fixed order: the order the Model
// lists them in, then anything the points hold that the Model does not list, in order of
// appearance (loads sorted ascending, because charts need them so).
type view struct {
	r      sim.Report
	modes  []string
	setups []string
	loads  []float64
	seeds  []uint64
	points map[key]*sim.Point
}

// The figures are first rounded as report.json rounds them, so report.md and report.html show
// exactly what report.json holds, and a report re-rendered from its report.json is identical.
func newView(r sim.Report) *view {
	r = normalize(r)
	v := &view{r: r, points: make(map[key]*sim.Point, len(r.Points))}
	var bals []string
	for _, p := range r.Points {
		if p.Balancer != "" {
			bals = appendUnique(bals, p.Balancer)
		}
	}
	// With replicas, a sweep runs setups under several balancers: each setup × balancer is a row.
	row := func(p *sim.Point) string { return p.Setup }
	if len(bals) > 1 {
		row = func(p *sim.Point) string { return p.Setup + " · " + p.Balancer }
	}
	v.modes = appendUnique(nil, r.Model.Cancellations...)
	if len(bals) <= 1 {
		v.setups = appendUnique(nil, r.Model.Setups...)
	}
	v.loads = appendUnique(nil, r.Model.LoadsPct...)
	v.seeds = appendUnique(nil, r.Model.Seeds...)
	for i := range r.Points {
		p := &r.Points[i]
		v.modes = appendUnique(v.modes, p.Cancellation)
		v.setups = appendUnique(v.setups, row(p))
		v.loads = appendUnique(v.loads, p.LoadPct)
		v.seeds = appendUnique(v.seeds, p.Seed)
		k := key{row(p), p.LoadPct, p.Cancellation, p.Seed}
		if _, dup := v.points[k]; !dup { // the first copy of a duplicated point wins
			v.points[k] = p
		}
	}
	slices.Sort(v.loads)
	return v
}

func appendUnique[T comparable](s []T, xs ...T) []T {
	for _, x := range xs {
		if !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}

// cell is the figures of one setup × load × mode, aggregated over a set of seeds.
type cell struct {
	n          int  // seeds that have a point here; 0 = no data
	collapse   bool // any seed collapsed
	unmeasured bool // every seed collapsed before a measured call arrived: no per-call figure
	p50        float64
	p99        float64
	p999       float64
	rpc        float64
	hedgeRate  float64
	winRate    float64
	rejected   float64
	failed     float64
	util       float64
	wasted     float64
	suppressed map[string]float64
}

// unmeasured reports whether p collapsed before its first measured call arrived (the first
// WarmupFraction of the calls are not measured), so that it has no per-call figure.
func (v *view) unmeasured(p *sim.Point) bool {
	return p.Collapse && p.Calls <= int(v.r.Model.WarmupFraction*float64(v.r.Model.Calls))
}

// cell aggregates the points at (setup, load, mode) over seeds by taking medians.
func (v *view) cell(setup string, load float64, mode string, seeds []uint64) cell {
	var ps []*sim.Point
	for _, s := range seeds {
		if p := v.points[key{setup, load, mode, s}]; p != nil {
			ps = append(ps, p)
		}
	}
	c := cell{n: len(ps)}
	if len(ps) == 0 {
		return c
	}
	for _, p := range ps {
		c.collapse = c.collapse || p.Collapse
	}
	// A seed that collapsed while its calls were still warming up measured none: its per-call
	// figures are zeros, not figures, and are left out of the medians.
	measured := ps[:0:0]
	for _, p := range ps {
		if !v.unmeasured(p) {
			measured = append(measured, p)
		}
	}
	if len(measured) == 0 {
		c.unmeasured = true
		return c
	}
	ps = measured
	med := func(f func(*sim.Point) float64) float64 {
		xs := make([]float64, len(ps))
		for i, p := range ps {
			xs[i] = f(p)
		}
		return median(xs)
	}
	c.p50 = med(func(p *sim.Point) float64 { return p.P50Ms })
	c.p99 = med(func(p *sim.Point) float64 { return p.P99Ms })
	c.p999 = med(func(p *sim.Point) float64 { return p.P999Ms })
	c.rpc = med(func(p *sim.Point) float64 { return p.RequestsPerCall })
	c.hedgeRate = med(func(p *sim.Point) float64 { return p.HedgeRate })
	c.winRate = med(func(p *sim.Point) float64 { return p.HedgeWinRate })
	c.rejected = med(func(p *sim.Point) float64 { return p.RejectedPct })
	c.failed = med(func(p *sim.Point) float64 { return p.FailedPct })
	c.util = med(func(p *sim.Point) float64 { return p.UtilisationPct })
	c.wasted = med(func(p *sim.Point) float64 { return p.WastedWorkPct })
	var reasons []string
	for _, p := range ps {
		for r := range p.Suppressed {
			reasons = appendUnique(reasons, r)
		}
	}
	if len(reasons) > 0 {
		c.suppressed = make(map[string]float64, len(reasons))
		for _, r := range reasons {
			c.suppressed[r] = med(func(p *sim.Point) float64 { return float64(p.Suppressed[r]) })
		}
	}
	return c
}

// median of xs (sorted in place); the mean of the two middle values for an even count.
// NaNs sort first and so are ignored unless they are the majority. A failed latency (+Inf)
// sorts last: the median of two seeds of which one failed is failed.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// table is one table of the report, rendered by both the Markdown and the HTML writer.
type table struct {
	title string
	head  []string
	rows  [][]string
	note  string // printed under the table; empty = none
}

// modeTitle is the section heading of a cancellation mode.
func modeTitle(mode string) string {
	switch mode {
	case "ignored":
		return "Cancellation ignored (the server finishes every losing attempt)"
	case "reaches":
		return "Cancellation reaches the server (a cancelled loser leaves the queue or frees its worker)"
	}
	return "Cancellation: " + mode
}

// modeShort is a mode's name in chart titles.
func modeShort(mode string) string {
	switch mode {
	case "ignored":
		return "cancellation ignored"
	case "reaches":
		return "cancellation reaches the server"
	}
	return "cancellation: " + mode
}

func fmtLoad(l float64) string { return strconv.FormatFloat(l, 'f', -1, 64) + "%" }

// fmtMs formats a latency: one decimal below 1000 ms, whole milliseconds above.
func fmtMs(x float64) string {
	switch {
	case sim.IsFailed(x):
		return failedText
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case math.Abs(x) >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

func fmtFloat(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if s == "-"+strconv.FormatFloat(0, 'f', prec, 64) { // no "-0.0"
		s = s[1:]
	}
	return s
}

// fmtShare formats a percentage with prec decimals, like fmtFloat, except that a share above
// zero that rounds to zero reads "<0.01" (for prec 2): one failed call of 180,000 is 0.00056 %,
// and "0.00" would say that none failed.
func fmtShare(x float64, prec int) string {
	s := fmtFloat(x, prec)
	if x > 0 && s == fmtFloat(0, prec) {
		return "<" + strconv.FormatFloat(math.Pow(10, -float64(prec)), 'f', prec, 64)
	}
	return s
}

// collapseMark flags a non-latency figure of a collapsed point: it covers the run until the
// simulator stopped it, which is still worth seeing (it shows the load multiplying).
const collapseMark = " *"

const collapseNote = "`*` marks a collapsed point: its figures cover the run until the simulator stopped it."

// modeTables builds every table of one cancellation mode, aggregated over seeds.
func (v *view) modeTables(mode string, seeds []uint64) []table {
	head := []string{"setup"}
	for _, l := range v.loads {
		head = append(head, fmtLoad(l))
	}
	// grid builds a table with one row per setup and one column per load.
	grid := func(title string, f func(c cell) string) table {
		t := table{title: title, head: head}
		for _, s := range v.setups {
			row := []string{s}
			has := false
			for _, l := range v.loads {
				c := v.cell(s, l, mode, seeds)
				if c.n == 0 {
					row = append(row, "")
					continue
				}
				has = true
				row = append(row, f(c))
			}
			if has {
				t.rows = append(t.rows, row)
			}
		}
		return t
	}
	latency := func(title string, f func(c cell) float64) table {
		return grid(title, func(c cell) string {
			if c.collapse {
				return collapseText
			}
			return fmtMs(f(c))
		})
	}
	marked := func(title string, f func(c cell) string) table {
		t := grid(title, func(c cell) string {
			if c.unmeasured {
				return collapseText // it stopped before a measured call: no figure to mark
			}
			s := f(c)
			if c.collapse {
				s += collapseMark
			}
			return s
		})
		if v.anyCollapse(mode, seeds) {
			t.note = collapseNote
		}
		return t
	}
	ts := []table{
		latency("p99 latency (ms)", func(c cell) float64 { return c.p99 }),
		latency("p99.9 latency (ms)", func(c cell) float64 { return c.p999 }),
		latency("p50 latency (ms)", func(c cell) float64 { return c.p50 }),
		marked("Requests per call (attempts that reached the server ÷ calls)", func(c cell) string { return fmtFloat(c.rpc, 3) }),
		marked("Failed calls (%)", func(c cell) string { return fmtShare(c.failed, 2) }),
		marked("Rejected calls (%)", func(c cell) string { return fmtShare(c.rejected, 2) }),
		marked("Worker utilisation (%)", func(c cell) string { return fmtFloat(c.util, 1) }),
		marked("Hedge rate / hedge win rate (% of calls hedged / % of hedges that won)", func(c cell) string {
			if c.hedgeRate == 0 || math.IsNaN(c.hedgeRate) {
				return "0 / –"
			}
			return fmtFloat(100*c.hedgeRate, 1) + " / " + fmtFloat(100*c.winRate, 1)
		}),
		marked("Wasted work (% of server time spent on discarded attempts)", func(c cell) string { return fmtShare(c.wasted, 1) }),
		v.suppressedTable(mode, seeds, head),
	}
	return ts
}

func (v *view) anyCollapse(mode string, seeds []uint64) bool {
	for _, s := range v.setups {
		for _, l := range v.loads {
			if v.cell(s, l, mode, seeds).collapse {
				return true
			}
		}
	}
	return false
}

// suppressedTable has one row per setup and reason that suppressed at least one hedge.
func (v *view) suppressedTable(mode string, seeds []uint64, head []string) table {
	h := append([]string{"setup", "reason"}, head[1:]...)
	t := table{title: "Suppressed hedges by reason (count)", head: h}
	for _, s := range v.setups {
		cells := make([]cell, len(v.loads))
		var reasons []string
		for i, l := range v.loads {
			cells[i] = v.cell(s, l, mode, seeds)
			for r, n := range cells[i].suppressed {
				if n != 0 {
					reasons = appendUnique(reasons, r)
				}
			}
		}
		slices.Sort(reasons)
		for _, r := range reasons {
			row := []string{s, r}
			for _, c := range cells {
				if c.n == 0 {
					row = append(row, "")
					continue
				}
				if c.unmeasured {
					row = append(row, collapseText)
					continue
				}
				// The mean of two seeds' counts can be a half: printed with no decimals it
				// rounded to even, and 1 and 0 hedges suppressed read "0".
				row = append(row, fmtFloat(c.suppressed[r], -1))
			}
			t.rows = append(t.rows, row)
		}
	}
	if len(t.rows) == 0 {
		t.note = "No hedge was suppressed."
	}
	return t
}

// joinSeeds formats seeds as "1, 2".
func joinSeeds(seeds []uint64) string {
	s := make([]string, len(seeds))
	for i, x := range seeds {
		s[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(s, ", ")
}

// clientsText is the clients row of the report's header: how many, how the calls are split
// between them, and each one's bound on calls in flight. Without the last two, a run of
// sequential clients or one heavy client read exactly as one of even, unbounded ones.
func clientsText(m sim.Model) string {
	var s string
	if m.Clients > 1 {
		s = strconv.Itoa(m.Clients) + " independent clients, each with its own policy; each call belongs to one at random"
		if m.HeavyClientShare > 0 {
			s += "; the first makes " + fmtFloat(100*m.HeavyClientShare, -1) + " % of the calls, the others split the rest evenly"
		}
	} else {
		s = "1 client"
	}
	switch k := m.ClientInFlight; {
	case k == 1:
		s += "; each sequential (1 call in flight at most): the rest wait in the client, their latency counted from arrival"
	case k > 1:
		s += "; each with " + strconv.Itoa(k) + " calls in flight at most: the rest wait in the client, their latency counted from arrival"
	}
	return s
}

// changesFamily reports whether the model m ran with other clients, client bound or replicas
// than the family's own (p), as -clients, -client-inflight and -replicas can make it.
func changesFamily(m sim.Model, p sim.Params) bool {
	return max(m.Clients, 1) != max(p.Clients, 1) || m.ClientInFlight != p.ClientInFlight ||
		max(m.Replicas, 1) != max(p.Replicas, 1)
}

// modelRows are the model parameters as (name, value) rows for the report's header.
func (v *view) modelRows() [][2]string {
	m := v.r.Model
	var rows [][2]string
	add := func(k, val string) { rows = append(rows, [2]string{k, val}) }
	if m.Family != "" && m.Family != sim.FamilyReference {
		about := m.Family
		if f, err := sim.FamilyByName(m.Family); err == nil {
			about += ": " + f.About
			if changesFamily(m, f.Params) {
				// -clients, -client-inflight or -replicas said otherwise: the family's own
				// words would contradict the rows below, which are what ran.
				about += " (as the family defines it; this run's flags change it: the rows below are what ran)"
			}
		}
		add("scenario family", about)
	}
	switch {
	case m.Replicas > 1:
		add("replicas", strconv.Itoa(m.Replicas)+" × "+strconv.Itoa(m.Workers)+
			" workers, each replica with its own FIFO queue; balancer "+m.Balancer+"; a hedge goes to a replica its call has not used")
	case m.Workers > 0:
		add("workers", strconv.Itoa(m.Workers)+", one FIFO queue shared by every attempt of every call")
	}
	if m.Clients > 1 || m.ClientInFlight > 0 {
		add("clients", clientsText(m))
	}
	if m.TieDelayMs > 0 {
		add("cancellation delay", fmtFloat(m.TieDelayMs, -1)+" ms for a cancellation to reach the server")
	}
	if m.DeadlineMs > 0 {
		add("deadline", "a call still running "+fmtFloat(m.DeadlineMs, -1)+" ms after its arrival fails (failed_pct)")
	}
	if m.ServiceTime != "" || m.MeanServiceMs > 0 {
		s := m.ServiceTime
		if m.MeanServiceMs > 0 {
			if s != "" {
				s += "; "
			}
			s += "mean " + fmtFloat(m.MeanServiceMs, 2) + " ms"
		}
		add("service time", s)
	}
	if m.HedgeDelayMs > 0 {
		add("hedge delay", fmtFloat(m.HedgeDelayMs, -1)+" ms (fixed-delay setups)")
	}
	if m.Calls > 0 {
		s := strconv.Itoa(m.Calls)
		if m.WarmupFraction > 0 {
			s += " (the first " + fmtFloat(100*m.WarmupFraction, -1) + "% by arrival are not measured)"
		}
		add("calls per point", s)
	}
	if len(v.seeds) > 0 {
		add("seeds", joinSeeds(v.seeds))
	}
	if len(v.loads) > 0 {
		ls := make([]string, len(v.loads))
		for i, l := range v.loads {
			ls[i] = fmtLoad(l)
		}
		add("loads", strings.Join(ls, ", ")+" of worker capacity, counting first attempts only")
	}
	if len(v.modes) > 0 {
		add("cancellation", strings.Join(v.modes, ", "))
	}
	return rows
}

// seedNote says how the tables treat several seeds; empty for one seed.
func (v *view) seedNote() string {
	if len(v.seeds) < 2 {
		return ""
	}
	return "Each cell is the median across seeds " + joinSeeds(v.seeds) +
		" (with two seeds, their mean); a latency cell reads \"collapse\" if any seed collapsed there."
}
