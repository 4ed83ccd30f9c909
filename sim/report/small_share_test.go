package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestNonzeroShareIsNotPrintedAsZero: a percentage column printed to two decimals showed a
// share below 0.005 % as "0.00", the same as no failure at all. One call in the reference
// run's 180,000 measured ones is 0.00056 %: docs/reference/report.md's failed and rejected
// tables read 0.00 for "hedge, default budget, adaptive limit" at 50 % though one seed failed
// 5 calls. Whether a setup fails any call is what the scorecard's rule asks, so a nonzero share
// must not read as zero.
func TestNonzeroShareIsNotPrintedAsZero(t *testing.T) {
	point := func(seed uint64, failed float64) sim.Point {
		return sim.Point{Setup: "s", LoadPct: 50, Cancellation: sim.Ignored, Seed: seed,
			P50Ms: 10, P99Ms: 20, P999Ms: 30, RequestsPerCall: 1,
			FailedPct: failed, RejectedPct: failed, WastedWorkPct: failed / 10}
	}
	r := sim.Report{
		Model: sim.Model{Calls: 200000, Seeds: []uint64{1, 2}, LoadsPct: []float64{50},
			Setups: []string{"s", "none"}, Cancellations: []string{sim.Ignored}},
		Points: []sim.Point{point(1, 0.0028), point(2, 0)},
	}
	none := point(1, 0)
	none.Setup = "none"
	r.Points = append(r.Points, none)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, title := range []string{"Failed calls (%)", "Rejected calls (%)", "Wasted work"} {
		got := mdRow(t, md, "## Cancellation ignored", title, "s")[1]
		zero := mdRow(t, md, "## Cancellation ignored", title, "none")[1]
		if got == zero || strings.Trim(got, "0.") == "" {
			t.Errorf("%s: a share of 0.0014 %% reads %q, a share of 0 reads %q", title, got, zero)
		}
	}

	// The scorecard's list of points that do not hold has a failed (%) column too.
	sc := sim.ScorecardResult{Setup: "s", Points: []sim.ScorecardPoint{{
		Family: "reference", LoadPct: 50, Cancellation: sim.Ignored, Seed: 1,
		Why: "failed calls 0.001 % > no hedge's 0.000 %", P99Ms: 20, NoHedgeP99Ms: 20,
		P999Ms: 30, NoHedgeP999Ms: 30, FailedPct: 0.0006,
	}}}
	b.Reset()
	if err := WriteScorecardMarkdown(&b, sc); err != nil {
		t.Fatal(err)
	}
	row := mdRow(t, b.String(), "## Points that do not hold", "", "reference")
	if got := row[4]; strings.Trim(got, "0.") == "" {
		t.Errorf("scorecard: a point that fails on 0.0006 %% failed calls shows failed (%%) %q", got)
	}
}
