package sim

import (
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
)

// Setup is one client configuration the simulator runs: a name (as it appears in report.json)
// and the hedge.Config every call of a point shares through one *hedge.Policy.
type Setup struct {
	Name   string
	Config hedge.Config
	// ServerLoad: the servers report their load on every response (queue length, workers
	// busy of total, the request's own wait), as hedgehttp.Queue and hedgegrpc's queue do,
	// and each client hands the report to its policy (hedge.Policy.ReportLoad) and to its
	// replica choice (replica.Set.ReportLoad). A client acts on the latest report from each
	// replica, which is as old as the last response it had from it.
	ServerLoad bool
	// LoadInterval, with ServerLoad, also sends every client every replica's load this often
	// (out-of-band reports, as hedgegrpc's Config.LoadReportInterval asks each backend for),
	// at a phase of its own per client, whatever its calls; 0 = per-call reports only.
	LoadInterval time.Duration
}

// Setup names. The six reference setups are fixed by SIMULATION.md; scripts select setups by
// these names, so they do not change.
const (
	SetupNoHedge       = "no hedge"
	SetupNoBudget      = "hedge, no budget"
	SetupDefaultBudget = "hedge, default budget"
	SetupBudget5       = "hedge, budget 5 %"
	SetupAdaptiveLimit = "hedge, default budget, adaptive limit"
	SetupThreeAttempts = "3 attempts, no budget"
	SetupRecommended   = "recommended"
	// SetupRecommendedLimit is the recommended default with the adaptive limit inside the
	// hedge: what to run when the dependency may be driven hot and cancellation does not reach
	// its server.
	SetupRecommendedLimit = "recommended, adaptive limit"
	SetupTiedRequests     = "tied requests"
	// SetupStartAware hedges only first attempts the server has reported as in service
	// (hedge.StartAware(0.95)): the simulated server reports every start.
	SetupStartAware = "start-aware"
	// SetupDeadlineAware is the recommended default made deadline-aware
	// (hedge.Adaptive.UseDeadline): with a caller's deadline (Params.Timeout), a hedge falls
	// due no later than the deadline less the live p95 of attempt latencies, and none is sent
	// once less time than that is left.
	SetupDeadlineAware = "deadline-aware"
	SetupAll           = "all" // in SweepConfig.Setups: every setup of Setups
)

// SetupServerAssisted is the recommended default with the servers' load reports
// (Setup.ServerLoad): no hedge while the shortest reported queue is long, a hedge to the
// replica with the shortest one, and with replicas behind p2c, a first attempt to the
// candidate whose answered request waited a quarter as long or less, or else with the
// lighter fresh report.
const SetupServerAssisted = "server-assisted"

// SetupServerAssistedOOB is server-assisted with out-of-band reports as well: every client
// hears from every replica every OOBInterval (hedgegrpc: Queue.RegisterOOB on the servers,
// Config.LoadReportInterval on the clients), not only from the replicas its own calls reach.
const SetupServerAssistedOOB = "server-assisted, out-of-band"

// OOBInterval is the out-of-band reporting interval of SetupServerAssistedOOB: a fifth of
// hedgegrpc's default (50 ms), for reports at most about one service time old. With 32
// clients each hears from a replica on its own responses only every 100 ms or more.
const OOBInterval = 10 * time.Millisecond

// ReferenceSetups are the names of the six reference setups of SIMULATION.md, in report order.
// Do not modify.
var ReferenceSetups = []string{
	SetupNoHedge,
	SetupNoBudget,
	SetupDefaultBudget,
	SetupBudget5,
	SetupAdaptiveLimit,
	SetupThreeAttempts,
}

// Setups returns every setup the simulator knows, in report order: the six reference setups,
// whose fixed hedge delay is hedgeDelay (20ms in the reference model; 0 = 20ms), then the
// library's recommended default (AtQuantile(0.95), default budget; it ignores hedgeDelay), the
// same with the adaptive limit, tied requests (hedge.Tied() with its defaults: a copy not
// started within 1ms gets a tie at another replica, the first to start service cancels the
// others, and a copy in service past the live p95 is hedged; default budget), start-aware
// hedging (the server reports when it starts each attempt), server-assisted hedging (the
// servers report their load on every response; then also out of band, every OOBInterval),
// and the recommended default made deadline-aware.
func Setups(hedgeDelay time.Duration) []Setup {
	if hedgeDelay <= 0 {
		hedgeDelay = 20 * time.Millisecond
	}
	after := hedge.After(hedgeDelay)
	unlimited := budget.Config{Off: true}
	return []Setup{
		{Name: SetupNoHedge, Config: hedge.Config{}},
		{Name: SetupNoBudget, Config: hedge.Config{Trigger: after, Attempts: 2, Budget: unlimited}},
		{Name: SetupDefaultBudget, Config: hedge.Config{Trigger: after}},
		{Name: SetupBudget5, Config: hedge.Config{Trigger: after, Budget: budget.Config{Ratio: 0.05}}},
		{Name: SetupAdaptiveLimit, Config: hedge.Config{Trigger: after, Limit: &limit.Config{}}},
		{Name: SetupThreeAttempts, Config: hedge.Config{Trigger: after, Attempts: 3, MaximumConcurrent: 3, Budget: unlimited}},
		{Name: SetupRecommended, Config: hedge.Config{Trigger: hedge.AtQuantile(0.95)}},
		{Name: SetupRecommendedLimit, Config: hedge.Config{Trigger: hedge.AtQuantile(0.95), Limit: &limit.Config{}}},
		{Name: SetupTiedRequests, Config: hedge.Config{Trigger: hedge.Tied()}},
		{Name: SetupStartAware, Config: hedge.Config{Trigger: hedge.StartAware(0.95)}},
		{Name: SetupServerAssisted, Config: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, ServerLoad: true},
		{Name: SetupServerAssistedOOB, Config: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, ServerLoad: true, LoadInterval: OOBInterval},
		{Name: SetupDeadlineAware, Config: hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{UseDeadline: true})}},
	}
}
