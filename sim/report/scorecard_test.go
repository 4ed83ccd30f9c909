package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

func sampleScorecard() sim.ScorecardResult {
	yes, no := true, false
	return sim.ScorecardResult{Setup: "recommended", Points: []sim.ScorecardPoint{
		{Family: "reference", LoadPct: 30, Cancellation: "ignored", Seed: 1, Holds: true, P99Ms: 25.91234, NoHedgeP99Ms: 200, P999Ms: 31, NoHedgeP999Ms: 290, Payoff: &yes},
		{Family: "reference", LoadPct: 30, Cancellation: "ignored", Seed: 2, Holds: true, P99Ms: 60, NoHedgeP99Ms: 200, P999Ms: 31, NoHedgeP999Ms: 290, Payoff: &no},
		{Family: "reference", LoadPct: 95, Cancellation: "ignored", Seed: 1, Holds: false, Why: "p99 failed > 1.05 × no hedge's 230.0 ms + 1 ms",
			P99Ms: sim.Failed, NoHedgeP99Ms: 230, P999Ms: sim.Failed, NoHedgeP999Ms: 340, FailedPct: 2.5},
		{Family: "reference", LoadPct: 95, Cancellation: "ignored", Seed: 2, Holds: true, P99Ms: 220, NoHedgeP99Ms: 230, P999Ms: 300, NoHedgeP999Ms: 340},
	}}
}

func TestScorecardWriters(t *testing.T) {
	r := sampleScorecard()
	var js, md bytes.Buffer
	if err := WriteScorecardJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Setup  string           `json:"setup"`
		Points []map[string]any `json:"points"`
	}
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Setup != "recommended" || len(raw.Points) != 4 || raw.Points[0]["p99_ms"] != 25.9123 ||
		raw.Points[2]["p99_ms"] != nil || raw.Points[2]["payoff"] != nil || raw.Points[1]["payoff"] != false {
		t.Errorf("scorecard.json: %s", js.String())
	}
	if err := WriteScorecardMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"**Holds on 3 of 4 points**; **payoff on 1 of 2 checked points**",
		"| reference | ✓ 60.0 / 200.0 | ✗ failed / 230.0 |",
		"✓ 25.9 / 200.0, ✗ 60.0 / 200.0",
		"| reference |  95% | ignored      |    1 |       2.50 | p99 failed > 1.05 × no hedge's 230.0 ms + 1 ms |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scorecard.md lacks %q:\n%s", want, out)
		}
	}
	var md2 bytes.Buffer
	if err := WriteScorecardMarkdown(&md2, r); err != nil || md2.String() != out {
		t.Error("scorecard.md is not deterministic")
	}
}

// TestScorecardHTML: the page draws one grid per mode, a cell per family × load, coloured by
// the worst seed's p99 ratio; a point that does not hold is framed and says which rule it
// broke; the page says how many points hold and lists those that do not, every text escaped.
func TestScorecardHTML(t *testing.T) {
	r := sampleScorecard()
	r.Points = append(r.Points, sim.ScorecardPoint{Family: "a<b>", LoadPct: 30, Cancellation: "reaches", Seed: 1, Holds: true,
		P99Ms: 100, NoHedgeP99Ms: 100, P999Ms: 1, NoHedgeP999Ms: 1})
	var b bytes.Buffer
	if err := WriteScorecardHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<!DOCTYPE html>", "<b>Holds on 4 of 5 points</b>",
		"Cancellation ignored", "Cancellation reaches",
		`<th class="mode" colspan="2">`, ">30%<", ">95%<", ">load<",
		"<b>0.30×</b>",                      // reference at 30 %: the worst seed, 60 / 200
		`class="c fail"`, "<b>✗ failed</b>", // reference at 95 %: seed 1 failed
		"breaks p99",
		"a&lt;b&gt;", // escaped
		"Points that do not hold (1)", "reference, 95% load, cancellation ignored, seed 1",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("scorecard.html lacks %q", want)
		}
	}
	if strings.Contains(page, "a<b>") || strings.Contains(page, "<script") {
		t.Error("scorecard.html carries unescaped text or a script")
	}
	if bg, _ := ratioColour(0.1); bg == "#e6e6e6" {
		t.Error("a 0.1× cell is coloured as even")
	}
	if a, b := mustColour(0.2), mustColour(0.8); a == b {
		t.Error("0.2× and 0.8× share a colour")
	}
}

func mustColour(rt float64) string { bg, _ := ratioColour(rt); return bg }
