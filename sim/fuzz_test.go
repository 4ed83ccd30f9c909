package sim

import (
	"math"
	"testing"
	"time"
)

// FuzzRun: whatever model a user asks for (workers, load, service time, setup, mode, seed),
// Run either refuses it with an error or returns a consistent point after bounded work.
func FuzzRun(f *testing.F) {
	f.Add(uint8(16), 70.0, uint16(2000), int64(10_000_000), uint8(2), false, uint64(1), false)
	f.Add(uint8(1), 95.0, uint16(500), int64(1), uint8(1), true, uint64(2), true)
	f.Add(uint8(3), 400.0, uint16(3000), int64(5_000_000), uint8(5), false, uint64(3), false)
	f.Add(uint8(0), 1e-9, uint16(10), int64(-5), uint8(7), true, uint64(0), true)
	f.Fuzz(func(t *testing.T, workers uint8, load float64, calls uint16, mean int64, setupIdx uint8, reaches bool, seed uint64, empirical bool) {
		var d Distribution = Exponential{MeanTime: time.Duration(mean)}
		if empirical {
			d = Empirical{Samples: []time.Duration{time.Duration(mean), time.Duration(mean / 3), 2 * time.Duration(mean)}}
		}
		setups := Setups(0)
		su := setups[int(setupIdx)%len(setups)]
		mode := Ignored
		if reaches {
			mode = Reaches
		}
		params := Params{Workers: int(workers), Service: d, Calls: int(calls)}
		p, err := Run(params, su, load, mode, seed)
		if err != nil {
			return
		}
		if !(p.P50Ms <= p.P99Ms && p.P99Ms <= p.P999Ms && p.P50Ms >= 0) {
			t.Errorf("percentiles out of order: %v %v %v", p.P50Ms, p.P99Ms, p.P999Ms)
		}
		if p.Collapse && p.P999Ms != 0 {
			t.Errorf("collapse with p99.9 %v", p.P999Ms)
		}
		for name, v := range map[string]float64{
			"utilisation": p.UtilisationPct, "wasted": p.WastedWorkPct, "rejected": p.RejectedPct,
		} {
			if !(v >= 0 && v <= 100+1e-9) {
				t.Errorf("%s %v%% out of [0, 100]", name, v)
			}
		}
		if !(p.RequestsPerCall >= 0 && p.RequestsPerCall <= 3) || math.IsNaN(p.HedgeRate) || p.HedgeWinRate > 1 {
			t.Errorf("requests per call %v, hedge rate %v, win rate %v", p.RequestsPerCall, p.HedgeRate, p.HedgeWinRate)
		}
		n := params.Calls
		if n == 0 {
			n = 200_000
		}
		if p.Events > 100*int64(n)+1_000_000 {
			t.Errorf("%d events for %d calls", p.Events, n)
		}
		if !p.Collapse && p.Calls != n {
			t.Errorf("%d calls simulated, %d asked, no collapse", p.Calls, n)
		}
	})
}
