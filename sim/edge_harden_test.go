package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// Common random numbers with a busy client: a setup that never sends a hedge (its hedge delay
// is an hour) must see every call exactly as "no hedge" does — same arrivals, same service,
// same client delays — so every call's latency must be the same. The client's delays come
// from one sequential stream, so merely arming a timer shifts the delays of later answers.
func TestBusyClientCommonRandomNumbers(t *testing.T) {
	for _, name := range []string{FamilyReference, FamilyBusyClient} {
		t.Run(name, func(t *testing.T) { checkNeverHedgingIsNoHedge(t, name) })
	}
}

func checkNeverHedgingIsNoHedge(t *testing.T, family string) {
	fam, err := FamilyByName(family)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Params{Calls: 5000}.withModel(fam.Params).resolve()
	if err != nil {
		t.Fatal(err)
	}
	lat := func(s Setup) map[int]int64 {
		r := newRunner()
		m := map[int]int64{}
		r.s.onFinish = func(call int, l int64) { m[call] = l }
		pt, err := r.run(context.Background(), p, s, 50, Ignored, 1)
		if err != nil {
			t.Fatal(err)
		}
		if pt.HedgeRate != 0 {
			t.Fatalf("%s hedged", s.Name)
		}
		return m
	}
	none := lat(Setup{Name: "no hedge"})
	late := lat(Setup{Name: "hedge after 1h", Config: hedge.Config{Trigger: hedge.After(time.Hour), Attempts: 2}})
	diff := 0
	for c, l := range none {
		if late[c] != l {
			diff++
		}
	}
	if diff > 0 {
		t.Errorf("%d of %d calls have another latency under a setup that never hedges", diff, len(none))
	}
}

// A service draw too long for a time.Duration must be capped at maxService, not become 0.
func TestServiceOverflowCapped(t *testing.T) {
	d := Exponential{MeanTime: time.Duration(1) << 61} // validateDistribution accepts it
	if err := validateDistribution(d); err != nil {
		t.Fatal(err)
	}
	for call := range 100 {
		if st := ServiceTime(d, 1, call, 0); st <= 0 {
			t.Fatalf("call %d: service time %v from an exponential of mean %v (cap %v)", call, st, d.MeanTime, maxService)
		}
	}
}

// A very long deadline or cancellation delay (the largest time.Duration: "no deadline, in
// effect") must not wrap virtual time: the deadline event lands in the past and fails every
// call, and a cancellation event in the past makes time run backwards.
func TestLongDurationsDoNotWrapTime(t *testing.T) {
	const forever = time.Duration(1<<63 - 1)
	p := mustRun(t, Params{Calls: 1000, Timeout: forever}, SetupNoHedge, 50, Ignored, 1)
	q := mustRun(t, Params{Calls: 1000}, SetupNoHedge, 50, Ignored, 1)
	if p.FailedPct != 0 || p.P99Ms != q.P99Ms {
		t.Errorf("Timeout %v: failed %v %%, p99 %v ms; without a deadline: failed %v %%, p99 %v ms", forever, p.FailedPct, p.P99Ms, q.FailedPct, q.P99Ms)
	}
	r := mustRun(t, Params{Calls: 2000, TieDelay: forever}, SetupNoBudget, 50, Reaches, 1)
	if r.UtilisationPct < 0 || r.UtilisationPct > 100 || r.Collapse {
		t.Errorf("TieDelay %v: utilisation %v %%, collapse %v", forever, r.UtilisationPct, r.Collapse)
	}
}

// Without hedging the queue is stable at any load below 100 %: a no-hedge run at 95 % must
// not be reported as a collapse (its percentiles are then withheld, and a scorecard judges the
// setup against a "failed" baseline it beats by default). The first rule of growing() has no
// size threshold: a queue of 18 requests on 16 workers, 1 at the half, reads as a collapse.
func TestNoHedgeStableIsNoCollapse(t *testing.T) {
	for _, seed := range []uint64{4, 13, 14, 15} {
		p := mustRun(t, Params{Calls: 2000}, SetupNoHedge, 95, Reaches, seed)
		if p.Collapse {
			t.Errorf("seed %d: no hedge at 95%% reported as a collapse (requests per call %.3f, utilisation %.1f %%)", seed, p.RequestsPerCall, p.UtilisationPct)
		}
	}
}

// Mean must be exact (it sets the arrival rate). A Pareto with Max below Min, or a negative
// Alpha, is accepted by validation but its Mean is not what Sample draws.
func TestParetoValidated(t *testing.T) {
	for _, d := range []Pareto{
		{Min: 10 * time.Millisecond, Alpha: 1.5, Max: 5 * time.Millisecond},
		{Min: 10 * time.Millisecond, Alpha: -1, Max: time.Second},
	} {
		err := validateDistribution(d)
		var sum float64
		const n = 20000
		for i := range n {
			sum += float64(ServiceTime(d, 1, i, 0))
		}
		got := time.Duration(sum / n)
		if err == nil && (got < d.Mean()*9/10 || got > d.Mean()*11/10) {
			t.Errorf("%v: accepted, Mean() %v but samples average %v", d, d.Mean(), got)
		}
	}
}

// panicky is a service distribution whose draws panic: a user's own, with a bug.
type panicky struct{ Exponential }

func (panicky) Sample(*rand.Rand) time.Duration { panic("boom") }

// A panic in a run (here a user's service distribution) ends the sweep with an error, not
// the process.
func TestSweepPanicIsAnError(t *testing.T) {
	cfg := SweepConfig{Calls: 2000, Service: panicky{Exponential{MeanTime: 10 * time.Millisecond}},
		Setups: []string{SetupNoHedge}, Loads: []float64{50}, Modes: []string{Ignored}, Seeds: []uint64{1, 2},
		Parallelism: 2}
	_, err := Sweep(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("Sweep = %v, want the run's panic as an error", err)
	}
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "panicky") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Sweep = %v (%T); want a one-line *sim.PanicError with the value and the stack of the panic", err, err)
	}
	// A panic with an error is seen through.
	cause := errors.New("a bug")
	if e := (&PanicError{Value: cause}); !errors.Is(e, cause) {
		t.Errorf("errors.Is(%v, its value) = false", e)
	}
}

// maxSource is a random source whose every draw is the largest: Float64 is just under 1.
type maxSource struct{}

func (maxSource) Uint64() uint64 { return ^uint64(0) }

// A Mixture never draws from a component of weight 0, even where rounding leaves a draw at
// the end of the weights.
func TestMixtureNeverDrawsWeightZero(t *testing.T) {
	m := Mixture{Components: []Component{
		{Weight: 0.3, Dist: Uniform{Min: time.Millisecond, Max: time.Millisecond}},
		{Weight: 0.7, Dist: Uniform{Min: 2 * time.Millisecond, Max: 2 * time.Millisecond}},
		{Weight: 0, Dist: Uniform{Min: time.Hour, Max: time.Hour}},
	}}
	if err := validateDistribution(m); err != nil {
		t.Fatal(err)
	}
	if got := m.Sample(rand.New(maxSource{})); got != 2*time.Millisecond {
		t.Errorf("the largest draw = %v, want 2ms (the last component of any weight)", got)
	}
}

// ctxPanicky is a service distribution whose draws panic with an error wrapping a context's.
type ctxPanicky struct{ Exponential }

func (ctxPanicky) Sample(*rand.Rand) time.Duration {
	panic(fmt.Errorf("a bug: %w", context.DeadlineExceeded))
}

// A panic whose value wraps a context error is still a panic: the sweep reports it, not "stopped
// before every point ran", which a run's context ending would give.
func TestSweepPanicWrappingAContextErrorIsReported(t *testing.T) {
	cfg := SweepConfig{Calls: 2000, Service: ctxPanicky{Exponential{MeanTime: 10 * time.Millisecond}},
		Setups: []string{SetupNoHedge}, Loads: []float64{50}, Modes: []string{Ignored}, Seeds: []uint64{1}}
	_, err := Sweep(context.Background(), cfg, nil)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Sweep = %v, want the run's *PanicError", err)
	}
}

// ErrTimelinePoint is returned as it is, a configuration error of its own.
func TestTimelinePointErrorIsTheSentinel(t *testing.T) {
	_, err := Timelines(context.Background(), SweepConfig{Loads: []float64{30, 50}, Seeds: []uint64{1}, Modes: []string{Ignored}}, 0)
	if err != ErrTimelinePoint || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Timelines with two loads = %v; want ErrTimelinePoint itself, matching ErrInvalidConfig", err)
	}
}
