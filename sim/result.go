package sim

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
}

// Point is one setup × load × cancellation mode × seed. Field names are stable: scripts read them.
type Point struct {
	Setup           string           `json:"setup"`
	LoadPct         float64          `json:"load_pct"`
	Cancellation    string           `json:"cancellation"` // "ignored" or "reaches"
	Seed            uint64           `json:"seed"`
	Collapse        bool             `json:"collapse"`
	P50Ms           float64          `json:"p50_ms"`
	P99Ms           float64          `json:"p99_ms"`
	P999Ms          float64          `json:"p999_ms"`
	RequestsPerCall float64          `json:"requests_per_call"`
	HedgeRate       float64          `json:"hedge_rate"`
	HedgeWinRate    float64          `json:"hedge_win_rate"`
	RejectedPct     float64          `json:"rejected_pct"`
	UtilisationPct  float64          `json:"utilisation_pct"`
	WastedWorkPct   float64          `json:"wasted_work_pct"`
	Suppressed      map[string]int64 `json:"suppressed"`
	MeanMs          float64          `json:"mean_ms"`      // mean call latency (successful measured calls), ms; 0 on collapse
	MeanWaitMs      float64          `json:"mean_wait_ms"` // mean time an attempt of a measured call waited in the queue before service, ms
	Calls           int              `json:"calls"`        // calls simulated (fewer than asked when a collapse stopped the run early)
	Events          int64            `json:"events"`       // events processed, for the events-per-second figure
}

// Report is everything one sweep produced; report.json is this, encoded.
type Report struct {
	Model  Model   `json:"model"`
	Points []Point `json:"points"`
}
