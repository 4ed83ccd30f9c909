package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/sim"
)

// Run one point of the reference model: the default budget at 50% load, with cancellation
// reaching the server. Hedges sent after 20ms beat the 2% of requests that hiccup.
func ExampleRun() {
	var setup sim.Setup
	for _, s := range sim.Setups(20 * time.Millisecond) {
		if s.Name == sim.SetupDefaultBudget {
			setup = s
		}
	}
	p, err := sim.Run(sim.Params{Calls: 20_000}, setup, 50, sim.Reaches, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("collapse: %v, p99 below 50ms: %v, hedges: %.0f%% of calls\n", p.Collapse, p.P99Ms < 50, 100*p.HedgeRate)
	// Output: collapse: false, p99 below 50ms: true, hedges: 2% of calls
}

// Sweep two setups over two loads: without a budget, hedging at 95% load multiplies the
// load and the queue never drains.
func ExampleSweep() {
	r, err := sim.Sweep(context.Background(), sim.SweepConfig{
		Calls:  10_000,
		Seeds:  []uint64{1},
		Loads:  []float64{50, 95},
		Setups: []string{sim.SetupNoHedge, sim.SetupNoBudget},
		Modes:  []string{sim.Ignored},
	}, nil)
	if err != nil {
		panic(err)
	}
	for _, p := range r.Points {
		fmt.Printf("%-16s %3.0f%%  collapse: %v\n", p.Setup, p.LoadPct, p.Collapse)
	}
	// Output:
	// no hedge          50%  collapse: false
	// no hedge          95%  collapse: false
	// hedge, no budget  50%  collapse: false
	// hedge, no budget  95%  collapse: true
}

// Script one call: the first attempt would take 100ms, so the hedge sent at 20ms wins after
// 5ms and the first attempt is discarded.
func ExampleScriptCall() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: budget.Config{Off: true}})
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	log, err := sim.ScriptCall(p, start, []time.Duration{100 * time.Millisecond, 5 * time.Millisecond})
	fmt.Println(log, err)
	// Output: 2 attempts over 25ms: hedge OK (5ms), at 20ms, discarded (25ms) <nil>
}

// Judge a setup against "no hedge" with the safety scorecard: here the recommended
// configuration on the reference model and on 4 workers, at 30 % load, cancellation ignored.
func ExampleScorecard() {
	r, err := sim.Scorecard(context.Background(), sim.ScorecardConfig{
		Setup:    sim.SetupRecommended,
		Families: []string{sim.FamilyReference, sim.FamilyFewWorkers},
		Loads:    []float64{30},
		Modes:    []string{sim.Ignored},
		Seeds:    []uint64{1},
		Calls:    20_000,
	}, nil)
	if err != nil {
		panic(err)
	}
	for _, p := range r.Points {
		fmt.Printf("%s at %v%%: holds %v, pays off %v\n", p.Family, p.LoadPct, p.Holds, *p.Payoff)
	}
	// Output:
	// reference at 30%: holds true, pays off true
	// few-workers at 30%: holds true, pays off true
}

// The hold rule: a percentile holds at up to 1.05 × no hedge's + 1 ms; a percentile that lands
// on failed calls loses to any number.
func ExampleJudge() {
	noHedge := sim.Point{P99Ms: 200, P999Ms: 300}
	holds, _ := sim.Judge(sim.Point{P99Ms: 211, P999Ms: 316}, noHedge)
	fmt.Println(holds)
	holds, why := sim.Judge(sim.Point{P99Ms: sim.Failed, P999Ms: sim.Failed, FailedPct: 2}, noHedge)
	fmt.Println(holds, why)
	// Output:
	// true
	// false p99 failed > 1.05 × no hedge's 200.0 ms + 1 ms; p99.9 failed > 1.05 × no hedge's 300.0 ms + 1 ms; failed calls 2.000 % > no hedge's 0.000 %
}

// Follow one run second by second: at 70 % load with cancellation ignored, recommended's
// hedges and the gates' refusals land in the seconds they happened in.
func ExampleTimelines() {
	tls, err := sim.Timelines(context.Background(), sim.SweepConfig{
		Calls:  10_000,
		Seeds:  []uint64{1},
		Loads:  []float64{70},
		Setups: []string{sim.SetupNoHedge, sim.SetupRecommended},
		Modes:  []string{sim.Ignored},
	}, 100*time.Millisecond)
	if err != nil {
		panic(err)
	}
	for _, tl := range tls {
		calls, hedges := 0, 0
		for _, s := range tl.Seconds {
			calls += s.Calls
			hedges += s.Hedges
		}
		fmt.Printf("%s: %d seconds, every call: %v, hedges sent: %v\n", tl.Setup, len(tl.Seconds), calls >= 10_000, hedges > 0)
	}
	// Output:
	// no hedge: 13 seconds, every call: true, hedges sent: false
	// recommended: 13 seconds, every call: true, hedges sent: true
}
