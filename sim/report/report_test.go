package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

var testSetups = []string{
	"no hedge",
	"hedge, no budget",
	"hedge, default budget",
	"hedge, budget 5 %",
	"hedge, default budget, adaptive limit",
	"3 attempts, no budget",
}

// sampleReport is a hand-made sweep shaped like a real one: 6 setups × 5 loads × 2 modes × the
// given seeds, with "hedge, no budget" and "3 attempts, no budget" collapsing at high load when
// cancellation is ignored.
func sampleReport(seeds ...uint64) sim.Report {
	loads := []float64{30, 50, 70, 85, 95}
	modes := []string{"ignored", "reaches"}
	r := sim.Report{Model: sim.Model{
		Workers:        16,
		ServiceTime:    "mixture: 0.98 lognormal(median 10ms, sigma 0.25) + 0.02 uniform[100ms,300ms]",
		MeanServiceMs:  13.8635,
		HedgeDelayMs:   20,
		Calls:          20000,
		WarmupFraction: 0.1,
		Seeds:          seeds,
		LoadsPct:       loads,
		Setups:         slices.Clone(testSetups), // tests edit it: never share the package-level slice
		Cancellations:  modes,
	}}
	for _, mode := range modes {
		for si, s := range testSetups {
			for li, l := range loads {
				for _, seed := range seeds {
					f := 1 + 0.01*float64(seed) + 0.001*float64(si)
					base := 240 * math.Pow(1.15, float64(li))
					p := sim.Point{
						Setup: s, LoadPct: l, Cancellation: mode, Seed: seed,
						P50Ms: 10.123 * f * math.Pow(1.1, float64(li)), P99Ms: base * f, P999Ms: 1.3 * base * f,
						RequestsPerCall: 1, UtilisationPct: l * f, Suppressed: map[string]int64{},
						Calls: 20000, Events: 123456,
					}
					if s != "no hedge" {
						p.P99Ms = (40 + 10*float64(si)) * math.Pow(1.4, float64(li)) * f
						p.P999Ms = 2.5 * p.P99Ms
						p.HedgeRate = 0.05 * f
						p.HedgeWinRate = 0.6
						p.RequestsPerCall = 1 + p.HedgeRate
						p.WastedWorkPct = 4.5 * f
					}
					if strings.Contains(s, "budget") && !strings.Contains(s, "no budget") {
						p.Suppressed["budget"] = int64(10 * li * int(seed))
					}
					if strings.Contains(s, "adaptive") && li >= 3 {
						p.Suppressed["limit"] = int64(3 * li)
					}
					if strings.Contains(s, "no budget") && mode == "ignored" && l >= 85 {
						p.Collapse = true
						p.P99Ms, p.P999Ms = 99999, 99999
						p.RequestsPerCall = 2.9
						p.Calls = 5000
						if l == 85 && seed == 2 { // collapses for one seed only
							p.Collapse = false
							p.P99Ms, p.P999Ms = 700, 1500
						}
					}
					r.Points = append(r.Points, p)
				}
			}
		}
	}
	return r
}

// mdRow returns the cells of the first row of the table titled title (in the section that
// starts at the first line containing section) whose first cell is name.
func mdRow(t *testing.T, md, section, title, name string) []string {
	t.Helper()
	i := strings.Index(md, section)
	if i < 0 {
		t.Fatalf("no section %q", section)
	}
	md = md[i:]
	j := strings.Index(md, title)
	if j < 0 {
		t.Fatalf("no table %q after %q", title, section)
	}
	for _, line := range strings.Split(md[j:], "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		if cells[0] == name {
			return cells
		}
	}
	t.Fatalf("no row %q in table %q", name, title)
	return nil
}

func TestMarkdownCells(t *testing.T) {
	r := sampleReport(1)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	ign, rea := "## Cancellation ignored", "## Cancellation reaches"

	head := mdRow(t, md, ign, "### p99 latency (ms)", "setup")
	if want := []string{"setup", "30%", "50%", "70%", "85%", "95%"}; !slices.Equal(head, want) {
		t.Errorf("p99 header = %q, want %q", head, want)
	}
	row := mdRow(t, md, ign, "### p99 latency (ms)", "no hedge")
	if want := fmtMs(240 * 1.01); row[1] != want {
		t.Errorf("no hedge p99 at 30%% = %q, want %q", row[1], want)
	}
	row = mdRow(t, md, ign, "### p99 latency (ms)", "hedge, no budget")
	if row[4] != "collapse" || row[5] != "collapse" || row[3] == "collapse" {
		t.Errorf("hedge, no budget p99 row = %q, want collapse at 85%% and 95%% only", row)
	}
	row = mdRow(t, md, ign, "### p99.9 latency (ms)", "3 attempts, no budget")
	if row[5] != "collapse" {
		t.Errorf("3 attempts p99.9 at 95%% = %q, want collapse", row[5])
	}
	row = mdRow(t, md, rea, "### p99 latency (ms)", "hedge, no budget")
	if slices.Contains(row, "collapse") {
		t.Errorf("reaches mode row %q shows a collapse that is not in the report", row)
	}
	row = mdRow(t, md, ign, "### Requests per call", "hedge, no budget")
	if row[5] != "2.900 *" || row[1] != "1.051" {
		t.Errorf("requests per call row = %q, want 1.051 at 30%% and \"2.900 *\" at 95%%", row)
	}
	row = mdRow(t, md, ign, "### Hedge rate", "no hedge")
	if row[1] != "0 / –" {
		t.Errorf("no hedge hedge-rate cell = %q, want \"0 / –\"", row[1])
	}
	row = mdRow(t, md, ign, "### Hedge rate", "hedge, default budget")
	if row[1] != "5.1 / 60.0" {
		t.Errorf("hedge rate cell = %q, want \"5.1 / 60.0\"", row[1])
	}
	row = mdRow(t, md, ign, "### Worker utilisation (%)", "no hedge")
	if row[2] != "50.5" {
		t.Errorf("utilisation at 50%% = %q, want 50.5", row[2])
	}
	// Suppressed: a row per setup and reason, reasons that never fired left out.
	row = mdRow(t, md, rea, "### Suppressed hedges by reason", "hedge, default budget, adaptive limit")
	if want := []string{"hedge, default budget, adaptive limit", "budget", "0", "10", "20", "30", "40"}; !slices.Equal(row, want) {
		t.Errorf("suppressed row = %q, want %q", row, want)
	}
	if !strings.Contains(md, "| hedge, default budget, adaptive limit | limit  |   0 |   0 |   0 |   9 |  12 |") {
		t.Errorf("suppressed table lacks the padded limit row:\n%s", md)
	}
	if strings.Contains(md, "| no hedge              | budget") {
		t.Error("suppressed table has a row for a reason that never fired")
	}
	for _, want := range []string{"| workers ", "13.86 ms", "| hedge delay ", "20000 (the first 10% by arrival are not measured)", collapseNote} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "median across seeds") {
		t.Error("one-seed report mentions a median across seeds")
	}
}

func TestMarkdownSeveralSeeds(t *testing.T) {
	r := sampleReport(1, 2)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !strings.Contains(md, "median across seeds 1, 2") {
		t.Error("markdown does not say cells are medians across seeds")
	}
	// Median of two seeds = their mean.
	row := mdRow(t, md, "## Cancellation ignored", "### p99 latency (ms)", "no hedge")
	if want := fmtMs(240 * 1.015); row[1] != want {
		t.Errorf("median p99 = %q, want %q", row[1], want)
	}
	// Collapsed for seed 1 only: the median cell says collapse, the seed-2 table does not.
	row = mdRow(t, md, "## Cancellation ignored", "### p99 latency (ms)", "hedge, no budget")
	if row[4] != "collapse" {
		t.Errorf("median cell for a point that collapsed for one seed = %q, want collapse", row[4])
	}
	row = mdRow(t, md, "### Seed 2, cancellation ignored: p99 latency (ms)", "", "hedge, no budget")
	if row[4] != "700.0" {
		t.Errorf("seed 2 cell = %q, want 700.0", row[4])
	}
	row = mdRow(t, md, "### Seed 1, cancellation ignored: p99 latency (ms)", "", "hedge, no budget")
	if row[4] != "collapse" {
		t.Errorf("seed 1 cell = %q, want collapse", row[4])
	}

	// WriteMarkdownTables: one seed's tables only.
	b.Reset()
	if err := WriteMarkdownTables(&b, r, 2); err != nil {
		t.Fatal(err)
	}
	tables := b.String()
	if strings.Contains(tables, "# Hedging simulation") || strings.Contains(tables, "| workers") {
		t.Error("WriteMarkdownTables wrote the report header")
	}
	row = mdRow(t, tables, "## Cancellation ignored", "### p99 latency (ms)", "no hedge")
	if want := fmtMs(240 * 1.02); row[1] != want {
		t.Errorf("seed-2 table p99 = %q, want %q", row[1], want)
	}
}

func TestHeadline(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHeadline(&b, sampleReport(1)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"p99 latency (ms), cancellation ignored:", "p99 latency (ms), cancellation reaches the server:", "| hedge, no budget "} {
		if !strings.Contains(out, want) {
			t.Errorf("headline lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "p99.9 latency") {
		t.Error("headline has more than the p99 tables")
	}
	// sampleReport has 20000 calls per point and one seed: the headline says it is short.
	for _, want := range []string{"p99 rests on the slowest 180 calls", "With one seed", "This is a short run"} {
		if !strings.Contains(out, want) {
			t.Errorf("headline lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	long := sampleReport(1, 2)
	long.Model.Calls = 200000
	if err := WriteHeadline(&b, long); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "short run") || !strings.Contains(out, "Between seeds 1, 2 the p99 of a point differs by 1.0 % at the median") {
		t.Errorf("headline of a long two-seed run:\n%s", out)
	}
}

// TestJSONRoundTrip: report.json decodes into sim.Report with every figure (rounded) and carries
// every field name SIMULATION.md promises to scripts.
func TestJSONRoundTrip(t *testing.T) {
	r := sampleReport(1, 2)
	r.Points[0].HedgeWinRate = math.NaN() // JSON cannot hold it
	r.Points[1].Suppressed = nil
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var got sim.Report
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	if len(got.Points) != len(r.Points) {
		t.Fatalf("decoded %d points, want %d", len(got.Points), len(r.Points))
	}
	want := normalize(r)
	for i := range want.Points {
		w, g := want.Points[i], got.Points[i]
		if g.Setup != w.Setup || g.LoadPct != w.LoadPct || g.Cancellation != w.Cancellation || g.Seed != w.Seed ||
			g.Collapse != w.Collapse || g.P50Ms != w.P50Ms || g.P99Ms != w.P99Ms || g.P999Ms != w.P999Ms ||
			g.RequestsPerCall != w.RequestsPerCall || g.HedgeRate != w.HedgeRate || g.HedgeWinRate != w.HedgeWinRate ||
			g.RejectedPct != w.RejectedPct || g.UtilisationPct != w.UtilisationPct || g.WastedWorkPct != w.WastedWorkPct ||
			g.Calls != w.Calls || g.Events != w.Events || len(g.Suppressed) != len(w.Suppressed) {
			t.Fatalf("point %d round-trips as %+v, want %+v", i, g, w)
		}
		for k, n := range w.Suppressed {
			if g.Suppressed[k] != n {
				t.Fatalf("point %d suppressed[%q] = %d, want %d", i, k, g.Suppressed[k], n)
			}
		}
		if math.Abs(g.P50Ms-r.Points[i].P50Ms) > 0.00005+1e-12 {
			t.Fatalf("point %d p50 %v is not %v rounded to 4 decimals", i, g.P50Ms, r.Points[i].P50Ms)
		}
	}
	if got.Points[0].HedgeWinRate != 0 {
		t.Errorf("NaN written as %v, want 0", got.Points[0].HedgeWinRate)
	}
	if got.Model.Workers != 16 || got.Model.MeanServiceMs != 13.8635 || !slices.Equal(got.Model.Seeds, []uint64{1, 2}) ||
		!slices.Equal(got.Model.Setups, testSetups) || !slices.Equal(got.Model.Cancellations, []string{"ignored", "reaches"}) {
		t.Errorf("model round-trips as %+v", got.Model)
	}

	// The names scripts read (SIMULATION.md, "Output").
	var raw struct {
		Model  map[string]json.RawMessage   `json:"model"`
		Points []map[string]json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Model == nil {
		t.Fatal(`report.json has no "model" object`)
	}
	for _, name := range []string{"setup", "load_pct", "cancellation", "seed", "collapse", "p50_ms", "p99_ms", "p999_ms",
		"requests_per_call", "hedge_rate", "hedge_win_rate", "rejected_pct", "utilisation_pct", "wasted_work_pct", "suppressed"} {
		for i, p := range raw.Points {
			if _, ok := p[name]; !ok {
				t.Fatalf("point %d lacks %q", i, name)
			}
		}
	}
	if s := string(raw.Points[1]["suppressed"]); s != "{}" {
		t.Errorf("nil suppressed map written as %s, want {}", s)
	}
	if !strings.Contains(b.String(), "\n  \"points\": [\n    {\n      \"setup\": \"no hedge\",") {
		t.Error("report.json is not indented by two spaces")
	}
	// Map keys sorted.
	if i, j := strings.Index(b.String(), `"budget": 10`), strings.Index(b.String(), `"limit": 9`); i < 0 || j < 0 || i > j {
		t.Errorf("suppressed keys not sorted (budget at %d, limit at %d)", i, j)
	}
}

func TestRoundJSON(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{1.23456789, 1.2346},
		{-0.00001, 0},
		{0.05, 0.05},
		{math.Inf(1), 0},
		{math.NaN(), 0},
		{1e300, 1e300},
		{123456.78904, 123456.789},
	} {
		if got := round(c.in); got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("round(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

var (
	reSeries  = regexp.MustCompile(`<path class="series" `)
	reSetupG  = regexp.MustCompile(`<g class="setup" data-setup="([^"]*)">`)
	reCollapX = regexp.MustCompile(`<title>[^<]*: collapse</title>`)
)

func TestHTMLCharts(t *testing.T) {
	r := sampleReport(1)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	svgs := strings.Split(h, "<svg ")[1:]
	if len(svgs) != 4 {
		t.Fatalf("%d charts, want 4 (p99 and p99.9 × 2 modes)", len(svgs))
	}
	titles := []string{
		"p99 latency against load — cancellation ignored",
		"p99 latency against load — cancellation reaches the server",
		"p99.9 latency against load — cancellation ignored",
		"p99.9 latency against load — cancellation reaches the server",
	}
	for i, svg := range svgs {
		svg = svg[:strings.Index(svg, "</svg>")]
		if !strings.Contains(svg, ">"+titles[i]+"</text>") {
			t.Errorf("chart %d lacks title %q", i, titles[i])
		}
		if n := len(reSeries.FindAllString(svg, -1)); n != len(testSetups) {
			t.Errorf("chart %d has %d series paths, want one per setup (%d)", i, n, len(testSetups))
		}
		var names []string
		for _, m := range reSetupG.FindAllStringSubmatch(svg, -1) {
			names = append(names, m[1])
		}
		if !slices.Equal(names, testSetups) {
			t.Errorf("chart %d series = %q, want %q", i, names, testSetups)
		}
		// Legend: every setup's name as text, with a distinct colour and dash pattern.
		for _, s := range testSetups {
			if !strings.Contains(svg, ">"+esc(s)+"</text>") {
				t.Errorf("chart %d legend lacks %q", i, s)
			}
		}
		wantX := 0
		if strings.Contains(titles[i], "ignored") {
			wantX = 4 // two setups collapse at two loads each
		}
		if n := len(reCollapX.FindAllString(svg, -1)); n != wantX {
			t.Errorf("chart %d marks %d collapsed points, want %d", i, n, wantX)
		}
		if !strings.Contains(svg, ">collapse</text>") || !strings.Contains(svg, "(log scale)") {
			t.Errorf("chart %d lacks the collapse band label or the axis title", i)
		}
	}
	if strings.Contains(h, "<script") || strings.Contains(h, "http://") && !strings.Contains(h, `xmlns="http://www.w3.org/2000/svg"`) ||
		strings.Contains(h, "https://") || strings.Contains(h, " src=") || strings.Contains(h, "<link") {
		t.Error("report.html is not self-contained")
	}
	// Tables under the charts, collapse cells styled.
	if i, j := strings.LastIndex(h, "</svg>"), strings.Index(h, "<h3>p99 latency (ms)</h3>"); j < 0 || j < i {
		t.Error("tables are not under the charts")
	}
	if !strings.Contains(h, `<td class="num collapse">collapse</td>`) {
		t.Error("collapse cells are not marked in the HTML tables")
	}
	if len(lineColours) < len(testSetups) || len(lineDashes) < len(testSetups) {
		t.Fatal("fewer styles than setups")
	}
	if !allDistinct(lineColours) || !allDistinct(lineDashes) || !allDistinct(markers) {
		t.Error("line styles repeat")
	}
}

func allDistinct(s []string) bool {
	c := slices.Clone(s)
	slices.Sort(c)
	return len(slices.Compact(c)) == len(s)
}

func TestHTMLEscapes(t *testing.T) {
	r := sampleReport(1)
	for i := range r.Points {
		if r.Points[i].Setup == "no hedge" {
			r.Points[i].Setup = `<b>"x" & y</b>`
		}
	}
	r.Model.Setups[0] = `<b>"x" & y</b>`
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<b>\"x\"") {
		t.Error("setup name written unescaped")
	}
	if !strings.Contains(b.String(), "&lt;b&gt;&#34;x&#34; &amp; y&lt;/b&gt;") {
		t.Error("escaped setup name missing")
	}
}

func TestLatencyAxis(t *testing.T) {
	for _, c := range []struct{ x, floor, ceil float64 }{
		{13, 10, 20}, {20, 20, 20}, {450, 200, 500}, {0.7, 0.5, 1}, {999, 500, 1000},
	} {
		if got := niceFloor(c.x); got != c.floor {
			t.Errorf("niceFloor(%v) = %v, want %v", c.x, got, c.floor)
		}
		if got := niceCeil(c.x); got != c.ceil {
			t.Errorf("niceCeil(%v) = %v, want %v", c.x, got, c.ceil)
		}
	}
	if got, want := logTicks(10, 500), []float64{10, 20, 50, 100, 200, 500}; !slices.Equal(got, want) {
		t.Errorf("logTicks(10, 500) = %v, want %v", got, want)
	}
	// The axis ignores collapsed points and spans at least a factor of 10.
	// The lowest point drawn is "hedge, no budget" at 30 %: p99 50.55ms, so the axis starts at
	// 50; collapsed points (99999) do not stretch it past 1000.
	v := newView(sampleReport(1))
	lo, hi := v.latencyRange()
	if lo != 50 || hi != 1000 {
		t.Errorf("latency axis [%v, %v], want [50, 1000]", lo, hi)
	}
	if lo, hi := newView(sim.Report{}).latencyRange(); lo <= 0 || hi/lo < 10 {
		t.Errorf("empty report axis [%v, %v]", lo, hi)
	}
}

// TestDeterministic: same Report, byte-identical files, whatever order maps iterate in.
func TestDeterministic(t *testing.T) {
	writers := map[string]func(*bytes.Buffer, sim.Report) error{
		"json":     func(b *bytes.Buffer, r sim.Report) error { return WriteJSON(b, r) },
		"markdown": func(b *bytes.Buffer, r sim.Report) error { return WriteMarkdown(b, r) },
		"tables":   func(b *bytes.Buffer, r sim.Report) error { return WriteMarkdownTables(b, r, 1) },
		"html":     func(b *bytes.Buffer, r sim.Report) error { return WriteHTML(b, r) },
		"headline": func(b *bytes.Buffer, r sim.Report) error { return WriteHeadline(b, r) },
	}
	for name, write := range writers {
		var first bytes.Buffer
		if err := write(&first, sampleReport(1, 2)); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			var again bytes.Buffer
			if err := write(&again, sampleReport(1, 2)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first.Bytes(), again.Bytes()) {
				t.Fatalf("%s output differs between two runs on the same report", name)
			}
		}
	}
}

func TestWritersDoNotModifyReport(t *testing.T) {
	r := sampleReport(1)
	r.Points[0].P50Ms = 1.23456789
	_ = WriteJSON(&bytes.Buffer{}, r)
	_ = WriteMarkdown(&bytes.Buffer{}, r)
	_ = WriteHTML(&bytes.Buffer{}, r)
	if r.Points[0].P50Ms != 1.23456789 {
		t.Error("a writer modified the report")
	}
}

func TestEmptyReport(t *testing.T) {
	for name, write := range map[string]func(*bytes.Buffer) error{
		"json":     func(b *bytes.Buffer) error { return WriteJSON(b, sim.Report{}) },
		"markdown": func(b *bytes.Buffer) error { return WriteMarkdown(b, sim.Report{}) },
		"html":     func(b *bytes.Buffer) error { return WriteHTML(b, sim.Report{}) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil || b.Len() == 0 {
			t.Errorf("%s on an empty report: %d bytes, err %v", name, b.Len(), err)
		}
	}
	var b bytes.Buffer
	_ = WriteJSON(&b, sim.Report{})
	if !strings.Contains(b.String(), `"points": []`) || !strings.Contains(b.String(), `"seeds": []`) {
		t.Errorf("empty report.json has null lists:\n%s", b.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

var errFail = errors.New("write failed")

func TestWriteErrors(t *testing.T) {
	r := sampleReport(1)
	if WriteJSON(failWriter{}, r) == nil || WriteMarkdown(failWriter{}, r) == nil || WriteHTML(failWriter{}, r) == nil ||
		WriteMarkdownTables(failWriter{}, r, 1) == nil || WriteHeadline(failWriter{}, r) == nil {
		t.Error("a write error was not returned")
	}
}

// TestRerenderFromJSON: report.md and report.html rendered from report.json are the ones
// rendered from the Report itself, so "hedgesim -from report.json" reproduces a run's files.
func TestRerenderFromJSON(t *testing.T) {
	r := sampleReport(1, 2)
	r.Points[3].P99Ms = 29.849999999 // rounds to 29.85 in JSON; must not print differently
	r.Points[4].MeanMs = 1.23456789
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back sim.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Points[4].MeanMs != 1.2346 {
		t.Errorf("mean_ms written as %v, want 1.2346 (every float field is rounded)", back.Points[4].MeanMs)
	}
	for name, write := range map[string]func(io.Writer, sim.Report) error{
		"json": WriteJSON, "markdown": WriteMarkdown, "html": WriteHTML,
	} {
		var a, b bytes.Buffer
		if err := write(&a, r); err != nil {
			t.Fatal(err)
		}
		if err := write(&b, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s rendered from report.json differs from the original", name)
		}
	}
}

// FuzzWriters: a report.json from anywhere (hedgesim -from reads one) never makes a writer
// panic or fail, and the output is deterministic.
func FuzzWriters(f *testing.F) {
	var b bytes.Buffer
	_ = WriteJSON(&b, sampleReport(1))
	f.Add(b.Bytes())
	f.Add([]byte(`{"points":[{"setup":"a","load_pct":-5,"p99_ms":-1,"collapse":true},{"setup":"a","load_pct":1e300,"p999_ms":1e300}]}`))
	f.Add([]byte(`{"model":{"loads_pct":[50,50],"cancellations":["x"]},"points":[{"setup":"<&>","load_pct":50,"cancellation":"x","p99_ms":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r sim.Report
		if json.Unmarshal(data, &r) != nil {
			return
		}
		for _, write := range []func(io.Writer, sim.Report) error{WriteJSON, WriteMarkdown, WriteHTML, WriteHeadline} {
			var a, b bytes.Buffer
			if err := write(&a, r); err != nil {
				t.Fatal(err)
			}
			_ = write(&b, r)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("output differs between two runs")
			}
		}
	})
}

func benchWriter(b *testing.B, write func(io.Writer, sim.Report) error) {
	r := sampleReport(1, 2)
	b.ReportAllocs()
	for b.Loop() {
		if err := write(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteJSON(b *testing.B)     { benchWriter(b, WriteJSON) }
func BenchmarkWriteMarkdown(b *testing.B) { benchWriter(b, WriteMarkdown) }
func BenchmarkWriteHTML(b *testing.B)     { benchWriter(b, WriteHTML) }

// TestHTMLOffScale: one extreme value does not stretch the axis; it is drawn on the top edge
// with its figure.
func TestHTMLOffScale(t *testing.T) {
	r := sampleReport(1)
	for i := range r.Points {
		if p := &r.Points[i]; p.Setup == "hedge, budget 5 %" && p.LoadPct == 95 && p.Cancellation == "reaches" {
			p.P999Ms = 250000
		}
	}
	if lo, hi := newView(r).latencyRange(); hi > 5000 {
		t.Errorf("axis [%v, %v] stretched by one extreme point", lo, hi)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), ">250 s</text>"); n != 1 {
		t.Errorf("off-scale label appears %d times, want once (p99.9, reaches)", n)
	}
	if !strings.Contains(b.String(), "<title>hedge, budget 5 %, 95%: p99.9 250000 ms</title>") {
		t.Error("off-scale point lacks its tooltip")
	}
}

func TestFailedPercentiles(t *testing.T) {
	r := sampleReport(1, 2)
	for i := range r.Points {
		p := &r.Points[i]
		if p.Setup == "hedge, budget 5 %" && p.LoadPct == 95 && p.Cancellation == "ignored" {
			p.FailedPct = 3
			p.P999Ms = sim.Failed
			p.MeanMs = sim.Failed
			if p.Seed == 2 { // one seed failed at p99: the median of the two is failed
				p.P99Ms = sim.Failed
			}
		}
	}
	var js, md, ht bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(js.String(), `"p999_ms": null`); n != 2 {
		t.Errorf("report.json has %d null p99.9s, want 2", n)
	}
	if n := strings.Count(js.String(), `"p99_ms": null`); n != 1 {
		t.Errorf("report.json has %d null p99s, want 1", n)
	}
	if n := strings.Count(js.String(), `"mean_ms": null`); n != 2 {
		t.Errorf("report.json has %d null means, want 2", n)
	}
	var back sim.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WriteJSON(&again, back); err != nil || again.String() != js.String() {
		t.Errorf("report.json does not survive a round trip (%v)", err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	// p99 and p99.9 per mode (medians), and the per-seed p99.9 of both seeds plus seed 2's p99.
	if n := strings.Count(md.String(), " failed |\n"); n != 5 {
		t.Errorf("report.md has %d failed cells, want 5:\n%s", n, md.String())
	}
	if err := WriteHTML(&ht, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ht.String(), `<td class="num failed">failed</td>`) {
		t.Error("report.html does not mark failed cells")
	}
	if !strings.Contains(ht.String(), "p99.9 failed (lands on failed calls)") {
		t.Error("report.html charts do not show the failed point")
	}
}

// The trust note counts the measured calls as the engine does (the first
// int(WarmupFraction × Calls) are left out), and words a tail of less than one call: a
// one-call run measured its one call, and was said to rest on "the slowest 0 calls".
func TestTrustNoteMeasuredCalls(t *testing.T) {
	for _, c := range []struct {
		calls int
		want  string
	}{
		{1, "each point measured 1 call, so its p99 and its p99.9 are each its slowest call."},
		{15, "each point measured 14 calls, so its p99 and its p99.9 are each its slowest call."},
		{1000, "each point measured 900 calls, so its p99 rests on the slowest 9 calls and its p99.9 is its slowest call."},
		{2000, "each point measured 1800 calls, so its p99 rests on the slowest 18 calls and its p99.9 on the slowest call."},
		{1112, "each point measured 1001 calls, so its p99 rests on the slowest 10 calls and its p99.9 on the slowest call."},
		{20000, "each point measured 18000 calls, so its p99 rests on the slowest 180 calls and its p99.9 on the slowest 18 calls."},
	} {
		r := sampleReport(1)
		r.Model.Calls = c.calls
		var b bytes.Buffer
		if err := WriteHeadline(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%d calls: headline lacks %q:\n%s", c.calls, c.want, b.String())
		}
	}
}
