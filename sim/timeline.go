package sim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hedgekit/hedge"
)

// Second is one second of a run's virtual time, as its policies' events tell it. A p99 that
// misses is often made by one episode: a burst of hedges at a backlog's onset shows as a second
// with many more hedges than its neighbours and few of them won, followed by seconds full of
// slow calls. Every call counts, the warm-up's too: an episode does not respect it.
type Second struct {
	// Calls is how many calls ended in the second and Failed how many of them failed. Slow
	// is how many took longer than the timeline's SlowAfter, failed calls among them, and
	// P99Ms the 99th percentile of their latencies (0 without calls): as in a Point, a failed
	// call is slower than any success, and a percentile that lands on one is [Failed] (null
	// in JSON).
	Calls  int
	Failed int
	Slow   int
	P99Ms  float64
	Hedges int // hedges sent in the second
	Won    int // hedges that answered first in the second
	// Refused counts the hedges the gates refused in the second, by reason (hedge.Reason's
	// names, as report.json's "suppressed" spells them).
	Refused map[string]int
}

// secondJSON is a Second as timeline.json holds it.
type secondJSON struct {
	Calls   int            `json:"calls"`
	Failed  int            `json:"failed"`
	Slow    int            `json:"slow"`
	P99Ms   *float64       `json:"p99_ms"`
	Hedges  int            `json:"hedges"`
	Won     int            `json:"won"`
	Refused map[string]int `json:"refused,omitempty"`
}

// MarshalJSON writes s with a Failed percentile as null.
func (s Second) MarshalJSON() ([]byte, error) {
	return json.Marshal(secondJSON{s.Calls, s.Failed, s.Slow, msOut(s.P99Ms), s.Hedges, s.Won, s.Refused})
}

// UnmarshalJSON reads s, a null percentile as Failed.
func (s *Second) UnmarshalJSON(b []byte) error {
	w := secondJSON{P99Ms: new(float64)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Second{w.Calls, w.Failed, w.Slow, msIn(w.P99Ms), w.Hedges, w.Won, w.Refused}
	return nil
}

// Timeline is one run second by second: a setup under a balancer at one load, cancellation
// mode and seed. P99Ms is the run's p99 as its Point reports it ([Failed], null in JSON, when
// it lands on a failed call); Collapse is the Point's, and a run that collapsed has no p99
// (Failed).
type Timeline struct {
	Setup        string
	Balancer     string
	LoadPct      float64
	Cancellation string
	Seed         uint64
	SlowAfterMs  float64
	P99Ms        float64
	Collapse     bool
	Seconds      []Second
}

// timelineJSON is a Timeline as timeline.json holds it.
type timelineJSON struct {
	Setup        string   `json:"setup"`
	Balancer     string   `json:"balancer,omitempty"`
	LoadPct      float64  `json:"load_pct"`
	Cancellation string   `json:"cancellation"`
	Seed         uint64   `json:"seed"`
	SlowAfterMs  float64  `json:"slow_after_ms"`
	P99Ms        *float64 `json:"p99_ms"`
	Collapse     bool     `json:"collapse,omitempty"`
	Seconds      []Second `json:"seconds"`
}

// MarshalJSON writes t with a Failed percentile as null.
func (t Timeline) MarshalJSON() ([]byte, error) {
	return json.Marshal(timelineJSON{t.Setup, t.Balancer, t.LoadPct, t.Cancellation, t.Seed, t.SlowAfterMs, msOut(t.P99Ms), t.Collapse, t.Seconds})
}

// UnmarshalJSON reads t, a null percentile as Failed.
func (t *Timeline) UnmarshalJSON(b []byte) error {
	w := timelineJSON{P99Ms: new(float64)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = Timeline{w.Setup, w.Balancer, w.LoadPct, w.Cancellation, w.Seed, w.SlowAfterMs, msIn(w.P99Ms), w.Collapse, w.Seconds}
	return nil
}

// ErrTimelinePoint is returned by Timelines for a SweepConfig of more than one load, seed or
// cancellation mode: a timeline follows one run of each setup.
//
// It is a configuration error ([ErrInvalidConfig]) itself, so that Timelines returns it as it
// is: err == ErrTimelinePoint holds, as errors.Is does.
var ErrTimelinePoint error = &configError{errors.New("sim: a timeline needs exactly one load, one seed and one cancellation mode")}

// Timelines runs every setup (and balancer) cfg asks for, at its one load, seed and
// cancellation mode, and returns each run second by second, in the order of a Sweep's report.
// slowAfter is what counts as a slow call; 0 = 200 ms.
func Timelines(ctx context.Context, cfg SweepConfig, slowAfter time.Duration) ([]Timeline, error) {
	if len(cfg.Loads) != 1 || len(cfg.Seeds) != 1 || len(cfg.Modes) != 1 || cfg.Modes[0] == "both" {
		return nil, ErrTimelinePoint
	}
	if slowAfter < 0 {
		return nil, invalid(errors.New("sim: a timeline's slow calls take longer than a duration >= 0 (0 = 200ms)"))
	}
	if slowAfter == 0 {
		slowAfter = 200 * time.Millisecond
	}
	pl, err := cfg.plan()
	if err != nil {
		return nil, invalid(err)
	}
	load, mode, seed := pl.loads[0], pl.modes[0], pl.seeds[0]
	out := make([]Timeline, len(pl.runs))
	par := parallelism(cfg.Parallelism, pl.params.Clients)
	_, err = runAll(ctx, par, len(pl.runs), func(ctx context.Context, r *runner, i int) (Point, error) {
		run := pl.runs[i]
		p := pl.params
		p.Balancer = run.balancer
		rec := newSeconds(slowAfter)
		setup := run.setup
		user := setup.Config.Observer
		setup.Config.Observer = func(e hedge.Event) {
			if user != nil {
				user(e)
			}
			rec.note(e)
		}
		// A call's end comes from the engine, not from the policy's CallFinished: its latency
		// counts from its arrival, time spent waiting in its client included, and a call
		// that never left its client ends too.
		r.s.onCallEnd = rec.ended
		defer func() { r.s.onCallEnd = nil }()
		pt, err := r.run(ctx, p, setup, load, mode, seed)
		if err != nil {
			return pt, err
		}
		out[i] = Timeline{
			Setup: run.setup.Name, Balancer: p.balancerName(), LoadPct: load, Cancellation: mode, Seed: seed,
			SlowAfterMs: float64(slowAfter) / float64(time.Millisecond), P99Ms: latency(pt, pt.P99Ms),
			Collapse: pt.Collapse, Seconds: rec.seconds(),
		}
		return pt, nil
	}, nil)
	if errors.Is(err, errStopped) {
		return nil, errors.New("sim: timelines stopped before every run finished")
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// secondsRecorder buckets one run's events by second of virtual time, for every policy of
// the run's clients. The simulator calls them from the run's one goroutine; the lock, which
// costs that goroutine little, keeps the recorder right whoever calls it.
type secondsRecorder struct {
	mu        sync.Mutex
	slowAfter time.Duration
	secs      []second // by second of virtual time since the run's start (vtime(0))
}

// second is a Second being recorded, with the latencies (ns) of its successful calls.
type second struct {
	Second
	latencies []int64
}

func newSeconds(slowAfter time.Duration) *secondsRecorder {
	return &secondsRecorder{slowAfter: slowAfter}
}

// at returns the second t falls in, counted from the run's start (virtual time 0, not the
// first event's: Seconds[i] is second i of the run, as the reports label it), nil for a time
// before the start.
func (r *secondsRecorder) at(t time.Time) *second {
	d := t.Sub(epoch)
	if d < 0 {
		return nil // none of the run's
	}
	i := int(d / time.Second)
	for len(r.secs) <= i {
		r.secs = append(r.secs, second{})
	}
	return &r.secs[i]
}

// note records a policy's event: the hedges sent, won and refused.
func (r *secondsRecorder) note(e hedge.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.at(e.Time)
	if s == nil {
		return
	}
	switch e.Kind {
	case hedge.HedgeStarted:
		s.Hedges++
	case hedge.HedgeWon:
		s.Won++
	case hedge.HedgeSuppressed:
		if s.Refused == nil {
			s.Refused = map[string]int{}
		}
		s.Refused[e.Reason.String()]++
	}
}

// ended records the end of a call at virtual time at (ns), latency after its arrival; err is
// its error, nil if it succeeded.
func (r *secondsRecorder) ended(at, latency int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.at(vtime(at))
	if s == nil {
		return
	}
	s.Calls++
	switch {
	case err != nil:
		s.Failed++
		s.Slow++ // slower than any success
	case time.Duration(latency) > r.slowAfter:
		s.Slow++
		fallthrough
	default:
		s.latencies = append(s.latencies, latency)
	}
}

// seconds returns what was recorded, each second's p99 worked out.
func (r *secondsRecorder) seconds() []Second {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Second, len(r.secs))
	for i := range r.secs {
		s := &r.secs[i]
		if s.Calls > 0 {
			// The failed calls sort after every success, as in a Point.
			slices.Sort(s.latencies)
			s.P99Ms = quantileMs(s.latencies, s.Failed, 0.99)
		}
		out[i] = s.Second
	}
	return out
}
