package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func pt(p99, p999, failed float64) Point {
	return Point{P99Ms: p99, P999Ms: p999, FailedPct: failed}
}

// TestJudge checks the hold rule against hand-computed cases: no hedge's p99 200 ms and p99.9
// 300 ms put the limits at 1.05 × 200 + 1 = 211 ms and 1.05 × 300 + 1 = 316 ms.
func TestJudge(t *testing.T) {
	nh := pt(200, 300, 0)
	for _, c := range []struct {
		name   string
		hedged Point
		holds  bool
		why    string
	}{
		{"well below", pt(30, 40, 0), true, ""},
		{"p99 on the limit", pt(211, 316, 0), true, ""},
		{"p99 just over", pt(211.001, 316, 0), false, "p99 211.0 ms > 1.05 × no hedge's 200.0 ms + 1 ms"},
		{"p99.9 just over", pt(100, 316.01, 0), false, "p99.9 316.0 ms > 1.05 × no hedge's 300.0 ms + 1 ms"},
		{"both over", pt(400, 500, 0), false, "p99 400.0 ms > 1.05 × no hedge's 200.0 ms + 1 ms; p99.9 500.0 ms > 1.05 × no hedge's 300.0 ms + 1 ms"},
		{"failed p99 against a number", pt(Failed, Failed, 2), false, "p99 failed > 1.05 × no hedge's 200.0 ms + 1 ms; p99.9 failed > 1.05 × no hedge's 300.0 ms + 1 ms; failed calls 2.000 % > no hedge's 0.000 %"},
		{"fast but failing a few calls", pt(30, 40, 0.05), false, "failed calls 0.050 % > no hedge's 0.000 %"},
		{"collapse", Point{Collapse: true}, false, "collapse"},
	} {
		holds, why := Judge(c.hedged, nh)
		if holds != c.holds || why != c.why {
			t.Errorf("%s: Judge = %v, %q; want %v, %q", c.name, holds, why, c.holds, c.why)
		}
	}
	// Against a no hedge that fails too: a failed percentile holds against a failed one, and
	// failing fewer calls is fine.
	if holds, why := Judge(pt(50, Failed, 1), pt(Failed, Failed, 3)); !holds {
		t.Errorf("fewer failures than no hedge: does not hold (%s)", why)
	}
	if holds, _ := Judge(pt(50, Failed, 3.5), pt(Failed, Failed, 3)); holds {
		t.Error("more failures than no hedge holds")
	}
	// Against a collapsed no hedge, anything that does not collapse holds on latency.
	if holds, why := Judge(pt(900, 1200, 0), Point{Collapse: true}); !holds {
		t.Errorf("against a collapsed no hedge: does not hold (%s)", why)
	}
}

func TestPays(t *testing.T) {
	nh := pt(200, 300, 0)
	for _, c := range []struct {
		hedged Point
		want   bool
	}{
		{pt(50, 70, 0), true}, // exactly a quarter
		{pt(50.01, 70, 0), false},
		{pt(Failed, Failed, 5), false},
		{Point{Collapse: true}, false},
	} {
		if got := Pays(c.hedged, nh); got != c.want {
			t.Errorf("Pays(%+v) = %v, want %v", c.hedged, got, c.want)
		}
	}
}

func TestScorecardPointPayoffChecked(t *testing.T) {
	ref, _ := FamilyByName(FamilyReference)
	exp, _ := FamilyByName(FamilyNoStragglers)
	h := Point{LoadPct: 50, P99Ms: 30, P999Ms: 40}
	if p := scorecardPoint(ref, h, pt(200, 300, 0)); p.Payoff == nil || !*p.Payoff || !p.Holds {
		t.Errorf("reference at 50 %%: %+v; want a payoff that passes", p)
	}
	h.LoadPct = 70
	if p := scorecardPoint(ref, h, pt(200, 300, 0)); p.Payoff != nil {
		t.Error("payoff checked at 70 % load")
	}
	h.LoadPct = 30
	if p := scorecardPoint(exp, h, pt(200, 300, 0)); p.Payoff != nil {
		t.Error("payoff checked on a family without stragglers")
	}
}

// TestScorecardReduced runs a small scorecard: a setup that collapses (hedging with no budget,
// cancellation ignored, 95 % load) fails there and holds at 30 %, and the JSON has the fields
// SIMULATION.md names.
func TestScorecardReduced(t *testing.T) {
	cfg := ScorecardConfig{
		Setup:    SetupNoBudget,
		Families: []string{FamilyReference, FamilyNoStragglers},
		Loads:    []float64{30, 95},
		Modes:    []string{Ignored},
		Seeds:    []uint64{1},
		Calls:    scaled(20_000),
	}
	runs := 0
	r, err := Scorecard(context.Background(), cfg, func(done, total int) { runs = total })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 4 || runs != 8 || r.Setup != SetupNoBudget {
		t.Fatalf("%d points from %d runs of %q; want 4 from 8", len(r.Points), runs, r.Setup)
	}
	for _, p := range r.Points {
		switch {
		case p.Family == FamilyReference && p.LoadPct == 30:
			if !p.Holds || p.Payoff == nil || !*p.Payoff {
				t.Errorf("reference at 30 %%: %+v; want it to hold and pay", p)
			}
		case p.LoadPct == 95:
			if p.Holds || !strings.Contains(p.Why, "collapse") || !IsFailed(p.P99Ms) {
				t.Errorf("%s at 95 %%: holds %v (%s), p99 %v; want a collapse", p.Family, p.Holds, p.Why, p.P99Ms)
			}
		}
	}
	if held, total := r.Held(); total != 4 || held > 2 {
		t.Errorf("held %d of %d", held, total)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"setup":`, `"family":`, `"load_pct":`, `"cancellation":`, `"seed":`, `"holds":`, `"why":`,
		`"p99_ms":null`, `"no_hedge_p99_ms":`, `"p999_ms":`, `"no_hedge_p999_ms":`, `"failed_pct":`, `"payoff":null`, `"payoff":true`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("scorecard JSON lacks %s: %s", f, b)
		}
	}
	var back ScorecardResult
	if err := json.Unmarshal(b, &back); err != nil || len(back.Points) != 4 || !IsFailed(back.Points[1].P99Ms) {
		t.Errorf("round trip: %v %+v", err, back)
	}
	again, err := Scorecard(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(again); string(b2) != string(b) {
		t.Error("the same scorecard twice gives different results")
	}
}

// TestScorecardNoHedgeHolds: no hedge judged against itself holds everywhere (the same runs).
func TestScorecardNoHedgeHolds(t *testing.T) {
	r, err := Scorecard(context.Background(), ScorecardConfig{
		Candidate: Setup{Name: "no hedge again"},
		Families:  []string{FamilyBursty, FamilyBrownout},
		Loads:     []float64{85},
		Seeds:     []uint64{3},
		Calls:     scaled(20_000),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Points {
		if !p.Holds || p.P99Ms != p.NoHedgeP99Ms {
			t.Errorf("%+v: no hedge does not hold against itself", p)
		}
	}
}

func TestScorecardErrors(t *testing.T) {
	for _, cfg := range []ScorecardConfig{
		{Setup: "turbo"},
		{Families: []string{"cloudy"}},
		{Modes: []string{"sometimes"}},
		{Loads: []float64{-1}},
	} {
		if _, err := Scorecard(context.Background(), cfg, nil); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// TestScorecardHeadroom: a family provisioned with headroom runs only the loads it can carry.
func TestScorecardHeadroom(t *testing.T) {
	r, err := Scorecard(context.Background(), ScorecardConfig{
		Families: []string{FamilyReplicaRefusing},
		Loads:    []float64{50, 95},
		Modes:    []string{Reaches},
		Seeds:    []uint64{1},
		Calls:    scaled(10_000),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 1 || r.Points[0].LoadPct != 50 {
		t.Errorf("points %+v; want only 50 %% load", r.Points)
	}
}
