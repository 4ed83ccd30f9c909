package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/hedgekit/hedge/sim"
)

// The simulator's own figures vary from seed to seed: a point where a burst of hiccups can
// make the budget spend its savings at once (recommended, cancellation ignored, 50-70 % load)
// has a p99 anywhere between 25 and 400 ms over ten seeds of 20,000 calls. A real run is one
// more draw of that random experiment, so it is compared with the simulator's spread over
// several seeds, not with one simulated run.

// Spread is one figure over the simulated seeds, in the model's ms; null where a percentile
// lands on failed calls.
type Spread struct {
	Min    *float64 `json:"min"`
	Median *float64 `json:"median"`
	Max    *float64 `json:"max"`
}

// Check is one figure of one point, real against simulated, in the model's milliseconds.
type Check struct {
	Figure string   `json:"figure"` // "p50_ms", "p99_ms" or "p999_ms"
	Real   *float64 `json:"real"`   // null: the percentile lands on a failed call
	Sim    Spread   `json:"sim"`    // over the simulated seeds
	// DiffPct is (real − simulated median) / simulated median in %; AdjustedDiffPct the same
	// after subtracting the measured overhead from the real figure.
	DiffPct         *float64 `json:"diff_pct"`
	AdjustedDiffPct *float64 `json:"adjusted_diff_pct"`
	OK              bool     `json:"ok"`
	// By says what made it agree: "band" (within ±band % of the simulated median),
	// "overhead" (only once the measured overhead is subtracted), "spread" (within the
	// simulated seeds' range widened by ±band %, though not within ±band % of their median:
	// one more draw of a figure the model itself makes vary), "failed" (both land on failed
	// calls); empty when it does not agree.
	By string `json:"by,omitempty"`
}

// Agreement says whether a real point agrees with the simulator: each latency percentile
// within ±band % of the simulated median, as measured or after subtracting the measured
// overhead (a constant, the same for every point of a protocol), or within the simulated
// seeds' range widened by ±band %; both collapse or neither.
type Agreement struct {
	OK     bool    `json:"ok"`
	Why    string  `json:"why,omitempty"` // what disagrees, for a person
	Checks []Check `json:"checks"`
}

func msPtr(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// spreadOf returns the smallest, median and largest of xs (failed = +Inf sorts last).
func spreadOf(xs []float64) (lo, med, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[0], s[(len(s)-1)/2], s[len(s)-1]
}

// compare checks real against the simulated runs sims (one per seed; at least one).
// overheadMs is the measured overhead in the model's ms; band is in %.
func compare(real sim.Point, sims []sim.Point, overheadMs, band float64) Agreement {
	a := Agreement{OK: true}
	collapsed := 0
	for _, s := range sims {
		if s.Collapse {
			collapsed++
		}
	}
	switch {
	case collapsed == len(sims) || real.Collapse:
		// A collapse has no percentiles. A real collapse agrees when a simulated seed collapsed
		// too; a simulator that collapses in every seed wants a real collapse.
		if real.Collapse != (collapsed > 0) {
			a.OK = false
			a.Why = fmt.Sprintf("collapse: real %v, simulated in %d of %d seeds", real.Collapse, collapsed, len(sims))
		}
		return a
	}
	figures := []struct {
		name string
		get  func(sim.Point) float64
	}{
		{"p50_ms", func(p sim.Point) float64 { return p.P50Ms }},
		{"p99_ms", func(p sim.Point) float64 { return p.P99Ms }},
		{"p999_ms", func(p sim.Point) float64 { return p.P999Ms }},
	}
	for _, f := range figures {
		var xs []float64
		for _, s := range sims {
			if !s.Collapse {
				xs = append(xs, f.get(s))
			}
		}
		lo, med, hi := spreadOf(xs)
		r := f.get(real)
		c := Check{Figure: f.name, Real: msPtr(r), Sim: Spread{msPtr(lo), msPtr(med), msPtr(hi)}}
		within := func(r, s float64) bool { return math.Abs(r-s) <= band/100*s }
		switch {
		case c.Real == nil:
			if c.OK = c.Sim.Max == nil; c.OK { // every seed lands on failures too
				c.By = "failed"
			}
		case c.Sim.Median != nil:
			d := 100 * (r - med) / med
			adj := 100 * (r - overheadMs - med) / med
			c.DiffPct, c.AdjustedDiffPct = &d, &adj
		}
		if c.Real != nil {
			for _, try := range []struct {
				ok bool
				by string
			}{
				{c.Sim.Median != nil && within(r, med), "band"},
				{c.Sim.Median != nil && within(r-overheadMs, med), "overhead"},
				{c.Sim.Min != nil && c.Sim.Max != nil && r >= (1-band/100)*lo && r-overheadMs <= (1+band/100)*hi, "spread"},
			} {
				if try.ok {
					c.OK, c.By = true, try.by
					break
				}
			}
		}
		if !c.OK {
			a.OK = false
			if a.Why != "" {
				a.Why += "; "
			}
			a.Why += fmt.Sprintf("%s real %s, simulated %s (seeds %s–%s)", f.name, fmtMs(r), fmtMs(med), fmtMs(lo), fmtMs(hi))
		}
		a.Checks = append(a.Checks, c)
	}
	return a
}

// fmtMs formats a latency in ms for a person: "failed" for a percentile on a failed call.
func fmtMs(x float64) string {
	if math.IsInf(x, 1) {
		return "failed"
	}
	if x >= 1000 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}
