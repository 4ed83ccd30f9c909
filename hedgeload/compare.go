package main

import (
	"fmt"
	"math"

	"github.com/hedgekit/hedge/sim"
)

// Check is one figure of one point, real against simulated, in the model's milliseconds.
type Check struct {
	Figure string   `json:"figure"` // "p50_ms", "p99_ms" or "p999_ms"
	Real   *float64 `json:"real"`   // null: the percentile lands on a failed call
	Sim    *float64 `json:"sim"`
	// DiffPct is (real − sim) / sim in %; AdjustedDiffPct the same after subtracting the
	// measured overhead from the real figure.
	DiffPct         *float64 `json:"diff_pct"`
	AdjustedDiffPct *float64 `json:"adjusted_diff_pct"`
	OK              bool     `json:"ok"`
}

// Agreement says whether a real point agrees with its simulated twin: each latency percentile
// within ±band % of the simulated one, as measured or after subtracting the measured overhead
// (a constant, the same for every point of a protocol); both collapse or neither.
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

// compare checks real against simulated. overheadMs is the measured overhead in the model's
// ms; band is in %.
func compare(real, simulated sim.Point, overheadMs, band float64) Agreement {
	a := Agreement{OK: true}
	if real.Collapse || simulated.Collapse {
		if real.Collapse != simulated.Collapse {
			a.OK = false
			a.Why = fmt.Sprintf("collapse: real %v, simulated %v", real.Collapse, simulated.Collapse)
		}
		return a
	}
	for _, f := range []struct {
		name      string
		real, sim float64
	}{
		{"p50_ms", real.P50Ms, simulated.P50Ms},
		{"p99_ms", real.P99Ms, simulated.P99Ms},
		{"p999_ms", real.P999Ms, simulated.P999Ms},
	} {
		c := Check{Figure: f.name, Real: msPtr(f.real), Sim: msPtr(f.sim)}
		switch {
		case c.Real == nil || c.Sim == nil:
			c.OK = c.Real == nil && c.Sim == nil // both land on failed calls
		default:
			d := 100 * (f.real - f.sim) / f.sim
			adj := 100 * (f.real - overheadMs - f.sim) / f.sim
			c.DiffPct, c.AdjustedDiffPct = &d, &adj
			c.OK = math.Abs(d) <= band || math.Abs(adj) <= band
		}
		if !c.OK {
			a.OK = false
			if a.Why != "" {
				a.Why += "; "
			}
			a.Why += fmt.Sprintf("%s real %s, simulated %s", f.name, fmtMs(f.real), fmtMs(f.sim))
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
