package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hedgekit/hedge"
)

// The safety scorecard (SIMULATION.md, "-scorecard"): a setup against "no hedge" on the same
// scenario family, load, cancellation mode and seed. A point holds when the setup's p99 and
// p99.9 are each at most 1.05 × no hedge's + 1 ms, it does not collapse, and it fails no more
// calls than no hedge. Where a family's stragglers are 2 % or more of its service times, the
// payoff check asks more at 30 % and 50 % load: p99 at most a quarter of no hedge's.

// Scorecard thresholds.
const (
	HoldRatio      = 1.05 // a percentile holds at ≤ HoldRatio × no hedge + HoldSlackMs
	HoldSlackMs    = 1.0
	PayoffRatio    = 0.25 // the payoff: p99 ≤ PayoffRatio × no hedge's
	PayoffMinShare = 0.02 // families whose stragglers are at least this share of service times
)

// PayoffLoads are the loads (%) at which the payoff is checked.
var PayoffLoads = []float64{30, 50}

// ScorecardConfig says what a scorecard runs. A zero field means the documented default.
type ScorecardConfig struct {
	// Setup is the setup judged, by name (see Setups). "" = "recommended".
	Setup string
	// Candidate, when its Name is set, is judged instead of the named Setup: a configuration
	// of the caller's own (a test, a proposed default).
	Candidate Setup
	// Families by name (see Families), each listed once. nil = every family.
	Families []string
	// Loads in percent, each listed once. nil = 30, 50, 70, 85, 95.
	Loads []float64
	// Modes: Ignored, Reaches or "both". nil = both.
	Modes []string
	// Seeds, each listed once. nil = 1, 2, 3: every point is judged on each.
	Seeds []uint64
	// Calls per run (each point runs the setup and no hedge). 0 = 200,000, the reference run's.
	Calls int
	// Parallelism is how many runs go at once. 0 = runtime.GOMAXPROCS(0), or fewer when a
	// family has thousands of clients (as Sweep's).
	Parallelism int
}

// ScorecardPoint is one family × load × mode × seed of a scorecard. A latency is null in JSON
// (Failed in Go) when it lands on failed calls or the run collapsed.
type ScorecardPoint struct {
	Family        string  `json:"family"`
	LoadPct       float64 `json:"load_pct"`
	Cancellation  string  `json:"cancellation"`
	Seed          uint64  `json:"seed"`
	Holds         bool    `json:"holds"`
	Why           string  `json:"why"` // "" when it holds, else every rule it breaks
	P99Ms         float64 `json:"p99_ms"`
	NoHedgeP99Ms  float64 `json:"no_hedge_p99_ms"`
	P999Ms        float64 `json:"p999_ms"`
	NoHedgeP999Ms float64 `json:"no_hedge_p999_ms"`
	FailedPct     float64 `json:"failed_pct"`
	// Payoff is whether the point meets the payoff check (p99 ≤ PayoffRatio × no hedge's);
	// nil where it is not checked (stragglers under 2 %, or a load other than PayoffLoads).
	Payoff *bool `json:"payoff"`

	// Not in scorecard.json: the two runs in full, for reports and tests.
	Hedged  Point `json:"-"`
	NoHedge Point `json:"-"`
}

// scorecardPointJSON is a ScorecardPoint as scorecard.json holds it: failed latencies are null.
type scorecardPointJSON struct {
	Family        string   `json:"family"`
	LoadPct       float64  `json:"load_pct"`
	Cancellation  string   `json:"cancellation"`
	Seed          uint64   `json:"seed"`
	Holds         bool     `json:"holds"`
	Why           string   `json:"why"`
	P99Ms         *float64 `json:"p99_ms"`
	NoHedgeP99Ms  *float64 `json:"no_hedge_p99_ms"`
	P999Ms        *float64 `json:"p999_ms"`
	NoHedgeP999Ms *float64 `json:"no_hedge_p999_ms"`
	FailedPct     float64  `json:"failed_pct"`
	Payoff        *bool    `json:"payoff"`
}

// MarshalJSON writes p as scorecard.json holds it, a failed latency as null.
func (p ScorecardPoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(scorecardPointJSON{
		p.Family, p.LoadPct, p.Cancellation, p.Seed, p.Holds, p.Why,
		msOut(p.P99Ms), msOut(p.NoHedgeP99Ms), msOut(p.P999Ms), msOut(p.NoHedgeP999Ms), p.FailedPct, p.Payoff,
	})
}

// UnmarshalJSON reads p from scorecard.json, null latencies as Failed.
func (p *ScorecardPoint) UnmarshalJSON(b []byte) error {
	w := scorecardPointJSON{P99Ms: new(float64), NoHedgeP99Ms: new(float64), P999Ms: new(float64), NoHedgeP999Ms: new(float64)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = ScorecardPoint{
		Family: w.Family, LoadPct: w.LoadPct, Cancellation: w.Cancellation, Seed: w.Seed, Holds: w.Holds, Why: w.Why,
		P99Ms: msIn(w.P99Ms), NoHedgeP99Ms: msIn(w.NoHedgeP99Ms), P999Ms: msIn(w.P999Ms), NoHedgeP999Ms: msIn(w.NoHedgeP999Ms),
		FailedPct: w.FailedPct, Payoff: w.Payoff,
	}
	return nil
}

// ScorecardResult is a whole scorecard; scorecard.json is it, encoded.
type ScorecardResult struct {
	Setup  string           `json:"setup"`
	Points []ScorecardPoint `json:"points"`
}

// Held counts the points that hold, of all.
func (r ScorecardResult) Held() (held, total int) {
	for _, p := range r.Points {
		if p.Holds {
			held++
		}
	}
	return held, len(r.Points)
}

// Paid counts the points whose payoff check passes, of those checked.
func (r ScorecardResult) Paid() (paid, checked int) {
	for _, p := range r.Points {
		if p.Payoff != nil {
			checked++
			if *p.Payoff {
				paid++
			}
		}
	}
	return paid, checked
}

// latency is a point's percentile as the scorecard compares it: a collapsed run is slower than
// anything (Failed).
func latency(p Point, ms float64) float64 {
	if p.Collapse {
		return Failed
	}
	return ms
}

// within reports whether x ≤ HoldRatio × base + HoldSlackMs; a failed x holds only against a
// failed base.
func within(x, base float64) bool {
	if IsFailed(x) {
		return IsFailed(base)
	}
	return x <= HoldRatio*base+HoldSlackMs
}

func fmtJudgeMs(x float64) string {
	if IsFailed(x) {
		return "failed"
	}
	return fmt.Sprintf("%.1f ms", x)
}

// fmtShares formats two percentages with three decimals, or with as many more as it takes to
// tell them apart: a point fails the rule by failing as little as one call more than no hedge,
// a difference of 0.0006 % in the reference run, and "0.001 % > 0.001 %" explains nothing.
func fmtShares(a, b float64) (string, string) {
	for prec := 3; prec <= 8; prec++ {
		sa, sb := strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
		if sa != sb {
			return sa, sb
		}
	}
	return strconv.FormatFloat(a, 'f', -1, 64), strconv.FormatFloat(b, 'f', -1, 64)
}

// Judge applies the hold rule to a setup's point against no hedge's on the same family, load,
// mode and seed: holds, and when not, why (every rule broken, separated by "; ").
func Judge(hedged, noHedge Point) (holds bool, why string) {
	var whys []string
	if hedged.Collapse {
		whys = append(whys, "collapse")
	} else {
		for _, c := range []struct {
			name    string
			x, base float64
		}{
			{"p99", hedged.P99Ms, latency(noHedge, noHedge.P99Ms)},
			{"p99.9", hedged.P999Ms, latency(noHedge, noHedge.P999Ms)},
		} {
			if !within(c.x, c.base) {
				whys = append(whys, fmt.Sprintf("%s %s > %g × no hedge's %s + %g ms", c.name, fmtJudgeMs(c.x), HoldRatio, fmtJudgeMs(c.base), HoldSlackMs))
			}
		}
	}
	if hedged.FailedPct > noHedge.FailedPct {
		x, base := fmtShares(hedged.FailedPct, noHedge.FailedPct)
		whys = append(whys, fmt.Sprintf("failed calls %s %% > no hedge's %s %%", x, base))
	}
	return len(whys) == 0, strings.Join(whys, "; ")
}

// Pays reports whether a setup's p99 is at most PayoffRatio × no hedge's (a failed or collapsed
// p99 does not pay).
func Pays(hedged, noHedge Point) bool {
	x, base := latency(hedged, hedged.P99Ms), latency(noHedge, noHedge.P99Ms)
	if IsFailed(x) {
		return false
	}
	return x <= PayoffRatio*base
}

// scorecardPoint judges one pair of runs.
func scorecardPoint(f Family, hedged, noHedge Point) ScorecardPoint {
	sp := ScorecardPoint{
		Family: f.Name, LoadPct: hedged.LoadPct, Cancellation: hedged.Cancellation, Seed: hedged.Seed,
		P99Ms: latency(hedged, hedged.P99Ms), NoHedgeP99Ms: latency(noHedge, noHedge.P99Ms),
		P999Ms: latency(hedged, hedged.P999Ms), NoHedgeP999Ms: latency(noHedge, noHedge.P999Ms),
		FailedPct: hedged.FailedPct, Hedged: hedged, NoHedge: noHedge,
	}
	sp.Holds, sp.Why = Judge(hedged, noHedge)
	if f.Stragglers >= PayoffMinShare && slices.Contains(PayoffLoads, hedged.LoadPct) {
		pays := Pays(hedged, noHedge)
		sp.Payoff = &pays
	}
	return sp
}

// candidate is the setup the scorecard judges: cfg.Candidate, else the named one (default
// "recommended").
func (cfg ScorecardConfig) candidate() (Setup, error) {
	setup := cfg.Candidate
	if setup.Name == "" {
		name := cfg.Setup
		if name == "" {
			name = SetupRecommended
		}
		all := Setups(0)
		i := slices.IndexFunc(all, func(s Setup) bool { return s.Name == name })
		if i < 0 {
			return Setup{}, fmt.Errorf("sim: unknown setup %q", name)
		}
		setup = all[i]
	}
	return setup, nil
}

// familiesByName is the named families, in order; none = every family. A family named twice
// is an error, as cmd/hedgesim's -families says.
func familiesByName(names []string) ([]Family, error) {
	var fams []Family
	if len(names) == 0 {
		fams = Families()
	}
	if err := checkOnce("family", names); err != nil {
		return nil, err
	}
	for _, n := range names {
		f, err := FamilyByName(n)
		if err != nil {
			return nil, err
		}
		fams = append(fams, f)
	}
	return fams, nil
}

// Scorecard runs cfg's setup and "no hedge" on every family × load × mode × seed and judges each
// point (a family with a MaxLoadPct runs only the loads up to it). Points come in a fixed order (family, load, mode, seed), so the same configuration
// gives the same result. progress, when not nil, is called after each run with the runs done
// and the total, from the scorecard's goroutines but never two at once. It stops early with
// ctx's error. It returns an error, before running anything, for an invalid cfg, including
// one that lists a family, a load or a seed twice.
func Scorecard(ctx context.Context, cfg ScorecardConfig, progress func(done, total int)) (ScorecardResult, error) {
	setup, err := cfg.candidate()
	if err != nil {
		return ScorecardResult{}, invalid(err)
	}
	var noHedge Setup
	for _, s := range Setups(0) {
		if s.Name == SetupNoHedge {
			noHedge = s
		}
	}
	fams, err := familiesByName(cfg.Families)
	if err != nil {
		return ScorecardResult{}, invalid(err)
	}
	loads := cfg.Loads
	if len(loads) == 0 {
		loads = []float64{30, 50, 70, 85, 95}
	}
	if err := checkOnce("load", loads); err != nil {
		return ScorecardResult{}, invalid(err)
	}
	modes, err := planModes(cfg.Modes)
	if err != nil {
		return ScorecardResult{}, invalid(err)
	}
	seeds := cfg.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{1, 2, 3}
	}
	if err := checkOnce("seed", seeds); err != nil {
		return ScorecardResult{}, invalid(err)
	}
	calls := cfg.Calls
	if calls == 0 {
		calls = 200_000
	}
	type job struct {
		fam   int
		p     Params
		setup Setup
		load  float64
		mode  string
		seed  uint64
	}
	var jobs []job
	for fi, f := range fams {
		p, err := Params{Calls: calls}.withModel(f.Params).resolve()
		if err != nil {
			return ScorecardResult{}, invalid(fmt.Errorf("sim: family %s: %w", f.Name, err))
		}
		for _, l := range loads {
			if err := checkPoint(l, Ignored); err != nil {
				return ScorecardResult{}, invalid(err)
			}
			if f.MaxLoadPct > 0 && l > f.MaxLoadPct {
				continue // beyond the headroom the family is provisioned with
			}
			for _, m := range modes {
				for _, sd := range seeds {
					jobs = append(jobs, job{fi, p, setup, l, m, sd}, job{fi, p, noHedge, l, m, sd})
				}
			}
		}
	}
	if len(jobs) == 0 {
		// Every load asked for is above every family's headroom: nothing to judge, and a
		// scorecard that "holds on 0 of 0 points" would read as a pass.
		return ScorecardResult{}, invalid(fmt.Errorf("sim: the scorecard has no point to judge: every load %v is above the families' headroom (MaxLoadPct)", loads))
	}
	if _, err := hedge.New(setup.Config); err != nil {
		return ScorecardResult{}, invalid(fmt.Errorf("sim: setup %q: %w", setup.Name, err))
	}
	clients := 1
	for _, j := range jobs {
		clients = max(clients, j.p.Clients)
	}
	par := parallelism(cfg.Parallelism, clients)
	points, err := runAll(ctx, par, len(jobs), func(ctx context.Context, r *runner, i int) (Point, error) {
		j := jobs[i]
		return r.run(ctx, j.p, j.setup, j.load, j.mode, j.seed)
	}, progress)
	if errors.Is(err, errStopped) {
		return ScorecardResult{}, errors.New("sim: scorecard stopped before every run finished")
	}
	if err != nil {
		return ScorecardResult{}, err
	}
	res := ScorecardResult{Setup: setup.Name}
	for i := 0; i < len(jobs); i += 2 {
		res.Points = append(res.Points, scorecardPoint(fams[jobs[i].fam], points[i], points[i+1]))
	}
	return res, nil
}
