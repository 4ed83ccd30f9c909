package sim

import (
	"encoding/json"
	"math"
)

// Failed is the value of a latency percentile that lands on a failed call: a call that failed
// (rejected by the adaptive limit, refused by an open breaker, or every attempt failed) counts
// as slower than any success, so a percentile at or beyond the successful share of calls has
// no latency. It is +Inf, so comparisons treat it as slower than any figure; report.json writes
// it as null and the tables as "failed". Test for it with [IsFailed].
var Failed = math.Inf(1)

// MeanMs is the mean latency, in ms, of the measured calls: lat holds the latencies (ns) of
// those that succeeded, and failed counts those that failed. It is [Failed] when any failed, since a failed call counts as slower
// than any success and a mean of the successes alone would read lower the more calls a setup
// fails; 0 when there are no calls, or the run collapsed.
func MeanMs(lat []int64, failed int, collapse bool) float64 {
	switch {
	case collapse, len(lat)+failed == 0:
		return 0
	case failed > 0:
		return Failed
	}
	var sum float64
	for _, v := range lat {
		sum += float64(v)
	}
	return sum / float64(len(lat)) / 1e6
}

// IsFailed reports whether a latency figure is [Failed].
func IsFailed(ms float64) bool { return math.IsInf(ms, 1) }

// Model is the queueing model a sweep runs: the parameters that go into report.json's "model".
type Model struct {
	Workers        int       `json:"workers"`
	ServiceTime    string    `json:"service_time"`    // a description, e.g. "mixture: 0.98 lognormal(median 10ms, sigma 0.25) + 0.02 uniform[100ms,300ms]"
	MeanServiceMs  float64   `json:"mean_service_ms"` // E[service time] of the distribution, used for the arrival rate
	HedgeDelayMs   float64   `json:"hedge_delay_ms"`
	Calls          int       `json:"calls"`
	WarmupFraction float64   `json:"warmup_fraction"`
	Seeds          []uint64  `json:"seeds"`
	LoadsPct       []float64 `json:"loads_pct"`
	Setups         []string  `json:"setups"`
	Cancellations  []string  `json:"cancellations"`
	Family         string    `json:"family"`   // the scenario family (Families); "reference" for SIMULATION.md's model
	Replicas       int       `json:"replicas"` // servers, each with Workers workers and its own FIFO queue
	Balancer       string    `json:"balancer"` // the client-side balancer; "" with one replica
	Clients        int       `json:"clients"`  // independent clients, each with its own policy
	// ClientInFlight bounds each client's calls in flight (0 = unbounded); the rest wait in
	// the client, their latency counted from arrival.
	ClientInFlight int `json:"client_inflight,omitempty"`
	// HeavyClientShare is the share of the calls the first client makes (0 = an even split).
	HeavyClientShare float64 `json:"heavy_client_share,omitempty"`
	TieDelayMs       float64 `json:"tie_delay_ms"` // how long a cancellation takes to reach the server
	// DeadlineMs is every call's deadline after its arrival (Params.Timeout); 0 = none.
	DeadlineMs float64 `json:"deadline_ms,omitempty"`
}

// Point is one setup × load × cancellation mode × seed. Field names are stable: scripts read them.
type Point struct {
	Setup           string           `json:"setup"`
	LoadPct         float64          `json:"load_pct"`
	Cancellation    string           `json:"cancellation"` // "ignored" or "reaches"
	Seed            uint64           `json:"seed"`
	Collapse        bool             `json:"collapse"`
	P50Ms           float64          `json:"p50_ms"`  // over every measured call, failures last; Failed (JSON null) when it lands on a failure
	P99Ms           float64          `json:"p99_ms"`  // likewise
	P999Ms          float64          `json:"p999_ms"` // likewise
	RequestsPerCall float64          `json:"requests_per_call"`
	HedgeRate       float64          `json:"hedge_rate"`
	HedgeWinRate    float64          `json:"hedge_win_rate"`
	RejectedPct     float64          `json:"rejected_pct"` // calls refused before reaching the server (adaptive limit, open breaker), % of measured calls
	FailedPct       float64          `json:"failed_pct"`   // every failed call, rejected ones included, % of measured calls
	UtilisationPct  float64          `json:"utilisation_pct"`
	WastedWorkPct   float64          `json:"wasted_work_pct"`
	Suppressed      map[string]int64 `json:"suppressed"`
	MeanMs          float64          `json:"mean_ms"`                   // mean call latency of every measured call, ms; Failed (JSON null) when any failed (MeanMs); 0 on collapse
	MeanWaitMs      float64          `json:"mean_wait_ms"`              // mean time an attempt of a measured call waited in the queue before service, ms
	Calls           int              `json:"calls"`                     // calls simulated (fewer than asked when a collapse stopped the run early)
	Events          int64            `json:"events"`                    // events processed, for the events-per-second figure
	Replicas        int              `json:"replicas"`                  // servers, each with Workers workers and its own queue (1: the reference model)
	Balancer        string           `json:"balancer"`                  // the client-side balancer; "" with one replica
	Clients         int              `json:"clients"`                   // independent clients, each with its own policy
	ClientInFlight  int              `json:"client_inflight,omitempty"` // each client's bound on calls in flight; 0 = none
}

// pointJSON is Point as report.json holds it: the percentiles are numbers or null (Failed).
// The percentile fields shadow the embedded ones and keep their place in the output.
type pointJSON struct {
	Setup           string           `json:"setup"`
	LoadPct         float64          `json:"load_pct"`
	Cancellation    string           `json:"cancellation"`
	Seed            uint64           `json:"seed"`
	Collapse        bool             `json:"collapse"`
	P50Ms           *float64         `json:"p50_ms"`
	P99Ms           *float64         `json:"p99_ms"`
	P999Ms          *float64         `json:"p999_ms"`
	RequestsPerCall float64          `json:"requests_per_call"`
	HedgeRate       float64          `json:"hedge_rate"`
	HedgeWinRate    float64          `json:"hedge_win_rate"`
	RejectedPct     float64          `json:"rejected_pct"`
	FailedPct       float64          `json:"failed_pct"`
	UtilisationPct  float64          `json:"utilisation_pct"`
	WastedWorkPct   float64          `json:"wasted_work_pct"`
	Suppressed      map[string]int64 `json:"suppressed"`
	MeanMs          *float64         `json:"mean_ms"`
	MeanWaitMs      float64          `json:"mean_wait_ms"`
	Calls           int              `json:"calls"`
	Events          int64            `json:"events"`
	Replicas        int              `json:"replicas"`
	Balancer        string           `json:"balancer"`
	Clients         int              `json:"clients"`
	ClientInFlight  int              `json:"client_inflight,omitempty"`
}

func msOut(x float64) *float64 {
	if IsFailed(x) {
		return nil
	}
	return &x
}

func msIn(x *float64) float64 {
	if x == nil {
		return Failed
	}
	return *x
}

// MarshalJSON writes p with a Failed percentile as null.
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal(pointJSON{
		p.Setup, p.LoadPct, p.Cancellation, p.Seed, p.Collapse,
		msOut(p.P50Ms), msOut(p.P99Ms), msOut(p.P999Ms),
		p.RequestsPerCall, p.HedgeRate, p.HedgeWinRate, p.RejectedPct, p.FailedPct,
		p.UtilisationPct, p.WastedWorkPct, p.Suppressed, msOut(p.MeanMs), p.MeanWaitMs, p.Calls, p.Events,
		p.Replicas, p.Balancer, p.Clients, p.ClientInFlight,
	})
}

// UnmarshalJSON reads p, a null percentile as Failed.
func (p *Point) UnmarshalJSON(b []byte) error {
	// A missing percentile or mean is 0, as for any missing field; only an explicit null is Failed.
	w := pointJSON{P50Ms: new(float64), P99Ms: new(float64), P999Ms: new(float64), MeanMs: new(float64)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Point{
		w.Setup, w.LoadPct, w.Cancellation, w.Seed, w.Collapse,
		msIn(w.P50Ms), msIn(w.P99Ms), msIn(w.P999Ms),
		w.RequestsPerCall, w.HedgeRate, w.HedgeWinRate, w.RejectedPct, w.FailedPct,
		w.UtilisationPct, w.WastedWorkPct, w.Suppressed, msIn(w.MeanMs), w.MeanWaitMs, w.Calls, w.Events,
		w.Replicas, w.Balancer, w.Clients, w.ClientInFlight,
	}
	return nil
}

// Report is everything one sweep produced; report.json is this, encoded.
type Report struct {
	Model  Model   `json:"model"`
	Points []Point `json:"points"`
}
