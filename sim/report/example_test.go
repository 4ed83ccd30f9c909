package report_test

import (
	"os"

	"github.com/hedgekit/hedge/sim"
	"github.com/hedgekit/hedge/sim/report"
)

func exampleReport() sim.Report {
	return sim.Report{
		Model: sim.Model{Workers: 16, Seeds: []uint64{1}, LoadsPct: []float64{50, 95},
			Setups: []string{"no hedge", "hedge, no budget"}, Cancellations: []string{"ignored"}},
		Points: []sim.Point{
			{Setup: "no hedge", LoadPct: 50, Cancellation: "ignored", Seed: 1, P99Ms: 202.81, RequestsPerCall: 1},
			{Setup: "no hedge", LoadPct: 95, Cancellation: "ignored", Seed: 1, P99Ms: 236.349, RequestsPerCall: 1},
			{Setup: "hedge, no budget", LoadPct: 50, Cancellation: "ignored", Seed: 1, P99Ms: 29.8, RequestsPerCall: 1.05,
				HedgeRate: 0.05, HedgeWinRate: 0.61},
			{Setup: "hedge, no budget", LoadPct: 95, Cancellation: "ignored", Seed: 1, Collapse: true, RequestsPerCall: 2},
		},
	}
}

// WriteHeadline prints the p99 table of each cancellation mode; a collapsed point reads
// "collapse".
func ExampleWriteHeadline() {
	if err := report.WriteHeadline(os.Stdout, exampleReport()); err != nil {
		panic(err)
	}
	// Output:
	// p99 latency (ms), cancellation ignored:
	//
	// | setup            |   50% |      95% |
	// | ---------------- | ----: | -------: |
	// | no hedge         | 202.8 |    236.3 |
	// | hedge, no budget |  29.8 | collapse |
	//
}

// WriteJSON writes report.json: indented, figures rounded to 4 decimals, empty maps as {}.
func ExampleWriteJSON() {
	r := exampleReport()
	r.Points = r.Points[2:3]
	if err := report.WriteJSON(os.Stdout, sim.Report{Points: r.Points}); err != nil {
		panic(err)
	}
	// Output:
	// {
	//   "model": {
	//     "workers": 0,
	//     "service_time": "",
	//     "mean_service_ms": 0,
	//     "hedge_delay_ms": 0,
	//     "calls": 0,
	//     "warmup_fraction": 0,
	//     "seeds": [],
	//     "loads_pct": [],
	//     "setups": [],
	//     "cancellations": [],
	//     "family": "",
	//     "replicas": 0,
	//     "balancer": "",
	//     "clients": 0,
	//     "tie_delay_ms": 0
	//   },
	//   "points": [
	//     {
	//       "setup": "hedge, no budget",
	//       "load_pct": 50,
	//       "cancellation": "ignored",
	//       "seed": 1,
	//       "collapse": false,
	//       "p50_ms": 0,
	//       "p99_ms": 29.8,
	//       "p999_ms": 0,
	//       "requests_per_call": 1.05,
	//       "hedge_rate": 0.05,
	//       "hedge_win_rate": 0.61,
	//       "rejected_pct": 0,
	//       "failed_pct": 0,
	//       "utilisation_pct": 0,
	//       "wasted_work_pct": 0,
	//       "suppressed": {},
	//       "mean_ms": 0,
	//       "mean_wait_ms": 0,
	//       "calls": 0,
	//       "events": 0,
	//       "replicas": 0,
	//       "balancer": "",
	//       "clients": 0
	//     }
	//   ]
	// }
}

// WriteMarkdownTables writes one seed's tables for documentation; here the first lines.
func ExampleWriteMarkdownTables() {
	r := exampleReport()
	r.Points = r.Points[:2]
	r.Model.Setups = r.Model.Setups[:1]
	if err := report.WriteMarkdownTables(os.Stdout, r, 1); err != nil {
		panic(err)
	}
	// Output:
	// ## Cancellation ignored (the server finishes every losing attempt)
	//
	// ### p99 latency (ms)
	//
	// | setup    |   50% |   95% |
	// | -------- | ----: | ----: |
	// | no hedge | 202.8 | 236.3 |
	//
	// ### p99.9 latency (ms)
	//
	// | setup    | 50% | 95% |
	// | -------- | --: | --: |
	// | no hedge | 0.0 | 0.0 |
	//
	// ### p50 latency (ms)
	//
	// | setup    | 50% | 95% |
	// | -------- | --: | --: |
	// | no hedge | 0.0 | 0.0 |
	//
	// ### Requests per call (attempts that reached the server ÷ calls)
	//
	// | setup    |   50% |   95% |
	// | -------- | ----: | ----: |
	// | no hedge | 1.000 | 1.000 |
	//
	// ### Failed calls (%)
	//
	// | setup    |  50% |  95% |
	// | -------- | ---: | ---: |
	// | no hedge | 0.00 | 0.00 |
	//
	// ### Rejected calls (%)
	//
	// | setup    |  50% |  95% |
	// | -------- | ---: | ---: |
	// | no hedge | 0.00 | 0.00 |
	//
	// ### Worker utilisation (%)
	//
	// | setup    | 50% | 95% |
	// | -------- | --: | --: |
	// | no hedge | 0.0 | 0.0 |
	//
	// ### Hedge rate / hedge win rate (% of calls hedged / % of hedges that won)
	//
	// | setup    |   50% |   95% |
	// | -------- | ----: | ----: |
	// | no hedge | 0 / – | 0 / – |
	//
	// ### Wasted work (% of server time spent on discarded attempts)
	//
	// | setup    | 50% | 95% |
	// | -------- | --: | --: |
	// | no hedge | 0.0 | 0.0 |
	//
	// ### Suppressed hedges by reason (count)
	//
	// No hedge was suppressed.
}
