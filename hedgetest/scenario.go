package hedgetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// Scenario is one scripted call and the policy it runs under: what each attempt does, and the
// attempt log every driver of the core's state machine must produce for it. The scenarios of
// [Scenarios] are the agreement test of the library's drivers (hedge.Do, hedge.DoInline, the
// HTTP and gRPC integrations, the simulator): each plays them in its own way and must make
// the same decisions at the same moments, because the decisions are the state machine's.
//
// The server has a free worker for every attempt: an attempt starts service the moment it is
// sent, unless Queued says otherwise.
type Scenario struct {
	Name   string
	Config hedge.Config
	// Warm is how many calls of 5ms, one every 10ms, each reporting its start at once, run on
	// the same policy before the scripted one (adaptive triggers are silent until warm).
	Warm int
	// Latencies: attempt k answers Latencies[k] after it is sent. An attempt with no entry,
	// or a negative one, never answers on its own (it runs until it is cancelled).
	Latencies []time.Duration
	// Failures: attempt k fails with Failures[k] when it is not nil: a final failure when it
	// is marked with [hedge.MarkPermanent] (a transport sends a 404, a NOT_FOUND), a
	// retriable one otherwise (a 503, an UNAVAILABLE).
	Failures []error
	// ReportService: each attempt reports when it starts service ([hedge.StartedService]),
	// at once unless Queued says otherwise; Tied and StartAware read it.
	ReportService bool
	// Queued: with ReportService, attempt k waits Queued[k] after it is sent before it starts
	// service (a queue at its replica). Its latency still counts from when it was sent.
	Queued []time.Duration
	// Want is the call's attempt log ([hedge.Log.String]), and WantErr whether the call fails.
	Want    string
	WantErr bool
}

// Answers is what attempt k of the scenario does, as [Script] plays it. A retriable failure
// is the error errUnavailable, a final one errNotFound marked permanent.
func (s Scenario) Answers() []Answer[string] {
	answers := make([]Answer[string], len(s.Latencies))
	for k, d := range s.Latencies {
		a := Answer[string]{After: d, Value: fmt.Sprint("attempt ", k), Stuck: d < 0}
		switch {
		case s.ReportService && k < len(s.Queued) && s.Queued[k] > 0:
			a.Starts, a.StartAfter = true, s.Queued[k]
		case s.ReportService:
			// The simulator reports starts in attempt order at the instant they are sent;
			// attempts that run concurrently keep that order at a nanosecond apiece.
			a.Starts, a.StartAfter = true, time.Duration(k)
		}
		if k < len(s.Failures) && s.Failures[k] != nil {
			a.Value, a.Err = "", s.Failures[k]
		}
		answers[k] = a
	}
	return answers
}

// Outcomes is each attempt's outcome as the default classifier sees it (a success for an
// attempt without a failure), for a driver that feeds outcomes to the state machine itself.
func (s Scenario) Outcomes() []hedge.Outcome {
	// One per attempt the scenario scripts, not per Failures entry: Failures is often
	// shorter than Latencies, or nil, when the later attempts succeed.
	out := make([]hedge.Outcome, max(len(s.Latencies), len(s.Failures)))
	for k := range out {
		var err error
		if k < len(s.Failures) {
			err = s.Failures[k]
		}
		out[k] = hedge.Classify(err)
	}
	return out
}

// WarmAnswers is what the calls that warm a scenario's policy do (see Scenario.Warm).
func WarmAnswers() []Answer[string] {
	return []Answer[string]{{After: 5 * time.Millisecond, Value: "warm", Starts: true}}
}

// Errors a scenario's attempts fail with: ErrUnavailable is retriable, ErrNotFound (marked
// permanent in a scenario) is final. Transports send them as their status codes.
var (
	ErrUnavailable = errors.New("hedgetest: unavailable")
	ErrNotFound    = errors.New("hedgetest: not found")
)

// Scenarios returns the agreement scenarios (see [Scenario]), a new slice each time.
func Scenarios() []Scenario {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	fail, final := ErrUnavailable, hedge.MarkPermanent(ErrNotFound)
	unlimited := budget.Config{Off: true}
	return []Scenario{
		{Name: "fast primary, no hedge", Config: hedge.Config{Trigger: hedge.After(ms(20))},
			Latencies: []time.Duration{ms(5)},
			Want:      "1 attempt over 5ms: OK (5ms)"},
		{Name: "slow primary, hedge wins", Config: hedge.Config{Trigger: hedge.After(ms(20))},
			Latencies: []time.Duration{ms(100), ms(3)},
			Want:      "2 attempts over 23ms: hedge OK (3ms), at 20ms, discarded (23ms)"},
		{Name: "slow hedge, primary wins", Config: hedge.Config{Trigger: hedge.After(ms(20))},
			Latencies: []time.Duration{ms(30), ms(50)},
			Want:      "2 attempts over 30ms: OK (30ms), hedge discarded (10ms), at 20ms"},
		{Name: "three attempts, the last wins", Config: hedge.Config{Trigger: hedge.After(ms(10)), Attempts: 3, MaximumConcurrent: 3, Budget: unlimited},
			Latencies: []time.Duration{ms(100), ms(100), ms(2)},
			Want:      "3 attempts over 22ms: hedge OK (2ms), at 20ms, discarded (22ms), hedge discarded (12ms), at 10ms"},
		{Name: "fast failure of the hedge does not win", Config: hedge.Config{Trigger: hedge.After(ms(10)), Attempts: 3, Budget: unlimited},
			Latencies: []time.Duration{ms(60), ms(1), ms(5)}, Failures: []error{nil, fail},
			Want: "3 attempts over 25ms: hedge failed (1ms), at 10ms, hedge OK (5ms), at 20ms, discarded (25ms)"},
		{Name: "primary fails, retry after backoff", Config: hedge.Config{Attempts: 2, Backoff: hedge.Backoff{Initial: ms(25), Jitter: hedge.Off}},
			Latencies: []time.Duration{ms(2), ms(4)}, Failures: []error{fail},
			Want: "2 attempts over 31ms: failed (2ms), retry OK (4ms), at 27ms"},
		{Name: "every attempt fails", Config: hedge.Config{Trigger: hedge.After(ms(10)), Budget: unlimited},
			Latencies: []time.Duration{ms(30), ms(5)}, Failures: []error{fail, fail}, WantErr: true,
			Want: "2 attempts over 30ms: hedge failed (5ms), at 10ms, failed (30ms)"},
		{Name: "permanent failure ends the call", Config: hedge.Config{Trigger: hedge.After(ms(10))},
			Latencies: []time.Duration{ms(40), ms(5)}, Failures: []error{nil, final},
			Want: "2 attempts over 40ms: hedge failed (5ms), at 10ms, OK (40ms)"},
		// One call at a time: nothing overtakes the slow primary, so the recommended
		// configuration cannot tell it is in service and does not hedge.
		{Name: "recommended: a slow primary nothing overtook is not hedged", Config: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Warm: 20,
			Latencies: []time.Duration{ms(100), ms(3)},
			Want:      "1 attempt over 100ms: OK (100ms)"},
		{Name: "AtQuantile without in-service evidence hedges at the threshold", Config: hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off})}, Warm: 20,
			Latencies: []time.Duration{ms(100), ms(3)},
			Want:      "2 attempts over 13ms: hedge OK (3ms), at 10ms, discarded (13ms)"},
		{Name: "tied at once: the first to start cancels its copy", Config: hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: unlimited},
			Latencies: []time.Duration{ms(30), ms(10)}, ReportService: true,
			Want: "2 attempts over 30ms: hedge discarded (0s), OK (30ms)"},
		{Name: "tied at once, three copies", Config: hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Attempts: 3, MaximumConcurrent: 3, Budget: unlimited},
			Latencies: []time.Duration{ms(12), ms(4), ms(8)}, ReportService: true,
			Want: "3 attempts over 12ms: hedge discarded (0s), hedge discarded (0s), OK (12ms)"},
		{Name: "tied: a first copy that starts at once is never tied", Config: hedge.Config{Trigger: hedge.Tied()},
			Latencies: []time.Duration{ms(30)}, ReportService: true,
			Want: "1 attempt over 30ms: OK (30ms)"},
		{Name: "tied: a copy queued past TieDelay is tied, and the tie that starts cancels it", Config: hedge.Config{Trigger: hedge.Tied()},
			Latencies: []time.Duration{ms(50), ms(8)}, Queued: []time.Duration{ms(20)}, ReportService: true,
			Want: "2 attempts over 9ms: discarded (1ms), hedge OK (8ms), at 1ms"},
		{Name: "tied: the first copy starts just after its tie, which is cancelled", Config: hedge.Config{Trigger: hedge.Tied()},
			Latencies: []time.Duration{ms(9), ms(8)}, Queued: []time.Duration{ms(2), ms(3)}, ReportService: true,
			Want: "2 attempts over 9ms: hedge discarded (1ms), at 1ms, OK (9ms)"},
		{Name: "tied: a copy in service past the threshold is hedged", Config: hedge.Config{Trigger: hedge.Tied()}, Warm: 20,
			Latencies: []time.Duration{ms(100), ms(4)}, ReportService: true,
			Want: "2 attempts over 14ms: hedge OK (4ms), at 10ms, discarded (14ms)"},
		{Name: "tied: a tie in service past the threshold is hedged", Config: hedge.Config{Trigger: hedge.Tied()}, Warm: 20,
			Latencies: []time.Duration{ms(60), ms(80), ms(5)}, Queued: []time.Duration{ms(30)}, ReportService: true,
			Want: "3 attempts over 16ms: discarded (1ms), hedge OK (5ms), at 11ms, hedge discarded (15ms), at 1ms"},
		{Name: "tied without start signals: the tie races", Config: hedge.Config{Trigger: hedge.Tied()},
			Latencies: []time.Duration{ms(30), ms(10)},
			Want:      "2 attempts over 11ms: hedge OK (10ms), at 1ms, discarded (11ms)"},
	}
}
