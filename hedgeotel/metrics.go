// Package hedgeotel exports what hedging policies do as OpenTelemetry metrics.
//
// One call wires a policy, or every per-host policy of a [hedgehttp.Transport], to a
// [metric.MeterProvider]:
//
//	p, stop, err := hedgeotel.NewPolicy(provider, "users", hedge.Config{Trigger: hedge.AtQuantile(0.95)})
//	tr, err := hedgeotel.NewTransport(provider, hedgehttp.Config{Policy: ...})
//
// Any other integration that reports events with a name and can list its policies'
// [hedge.Measured] figures is wired with [Metrics.KeyedObserver] and [Metrics.Watch]; for
// hedgegrpc's per-method policies:
//
//	cfg.Observer = metrics.KeyedObserver()
//	interceptor, err := hedgegrpc.NewInterceptor(cfg)
//	stop, err := metrics.Watch(interceptor.Measured)
//	stopOver, err := metrics.WatchOverBound(interceptor.OverMaxMethods)
//
// # Instruments
//
// Every measurement but hedge.calls.over_bound carries hedge.operation (the policy's name:
// the name given to NewPolicy, the host key of a Transport, the method of a gRPC
// interceptor). Other attributes take a handful of values each, so the number of series stays
// small.
//
//	hedge.attempt.duration     histogram  s         hedge.attempt.kind (primary|hedge|retry),
//	                                                hedge.attempt.outcome (ok|error|discarded)
//	hedge.call.duration        histogram  s         hedge.call.outcome
//	hedge.calls                counter    {call}    hedge.call.outcome (ok|error|rejected|breaker_open|cancelled|unreachable)
//	hedge.hedges.started       counter    {hedge}
//	hedge.hedges.won           counter    {hedge}
//	hedge.attempts.discarded   counter    {attempt} hedge.attempt.kind
//	hedge.hedges.suppressed    counter    {hedge}   hedge.suppression.reason (budget, cold, win_rate, …)
//	hedge.retries              counter    {retry}
//	hedge.limit.rejections     counter    {attempt} hedge.attempt.kind
//	hedge.threshold            gauge      s         (only once the policy is warm)
//	hedge.budget.balance       gauge      {attempt} (not for a policy without a budget)
//	hedge.breaker.state        gauge      1         hedge.breaker.state (closed|open|half-open): 1 for the current state, 0 for the others
//	hedge.breaker.error_rate   gauge      1         (with a breaker)
//	hedge.concurrency.limit    gauge      {attempt} (with an adaptive limit)
//	hedge.concurrency.in_flight gauge     {attempt} (with an adaptive limit)
//	hedge.win_rate.allowance   gauge      1
//	hedge.calls.over_bound     counter    {call}    (no attributes; see below)
//
// hedge.calls.over_bound counts the calls an integration sent once, unhedged and unretried,
// because it already kept as many policies as it may (hedgehttp.Config.MaxKeys,
// hedgegrpc.Config.MaxMethods). They belong to no operation, and naming their hosts or
// methods would grow the series without bound, which is what the bound is there to stop: the
// count is one series, the sum over every watched Transport and Interceptor
// ([Metrics.WatchOverBound]). It is reported once something is watched (and from then on,
// whatever stops), at 0 until a call goes over; a rising count says the bound is too low for
// the keys the client really meets, or that the keys are not what they should be (a Key
// function that puts a user's ID in).
//
// The histograms' buckets resolve 1 ms to 10 s (1, 2, 3, 5 and 7.5 per decade). A discarded
// attempt's duration is how long it had run when it lost.
//
// # Cost
//
// With a nil MeterProvider nothing is installed: the policy's Observer stays as it was, and a
// call costs exactly what it costs without this package. (The global provider is not used
// unless given: pass otel.GetMeterProvider() for it.) With a provider, an event costs one
// to three instrument updates (a finished call: its count and its duration, and a limit's
// rejection when it was one; a discarded attempt: its duration and its count), with
// attribute sets built once per operation.
package hedgeotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// ScopeName is the instrumentation scope of the meter this package uses.
const ScopeName = "github.com/hedgekit/hedge/hedgeotel"

// Attribute keys.
const (
	KeyOperation   = attribute.Key("hedge.operation")
	KeyAttemptKind = attribute.Key("hedge.attempt.kind")
	KeyAttemptOut  = attribute.Key("hedge.attempt.outcome")
	KeyCallOut     = attribute.Key("hedge.call.outcome")
	KeyReason      = attribute.Key("hedge.suppression.reason")
	KeyBreaker     = attribute.Key("hedge.breaker.state")
)

// Buckets are the histograms' bucket boundaries, in seconds: 1 ms to 10 s.
var Buckets = []float64{
	0.001, 0.002, 0.003, 0.005, 0.0075,
	0.01, 0.02, 0.03, 0.05, 0.075,
	0.1, 0.2, 0.3, 0.5, 0.75,
	1, 2, 3, 5, 7.5,
	10,
}

// Metrics holds the instruments of one MeterProvider. Build it once and share it; it is safe
// for concurrent use. A nil *Metrics records nothing: its observers are nil and Watch does
// nothing, so code can wire metrics unconditionally. A Metrics not built by New (the zero
// value, &Metrics{}) has no instruments: Watch, NewPolicy and NewTransport return an error
// that names New, and Observer and KeyedObserver panic with a message that names New when
// they are called, before any event is recorded.
type Metrics struct {
	meter metric.Meter

	attemptDuration metric.Float64Histogram
	callDuration    metric.Float64Histogram
	calls           metric.Int64Counter
	hedgesStarted   metric.Int64Counter
	hedgesWon       metric.Int64Counter
	discarded       metric.Int64Counter
	suppressed      metric.Int64Counter
	retries         metric.Int64Counter
	limitRejections metric.Int64Counter

	threshold  metric.Float64ObservableGauge
	budget     metric.Float64ObservableGauge
	breaker    metric.Int64ObservableGauge
	errorRate  metric.Float64ObservableGauge
	limit      metric.Int64ObservableGauge
	inFlight   metric.Int64ObservableGauge
	allowance  metric.Float64ObservableGauge
	overBound  metric.Int64ObservableCounter
	reg        metric.Registration
	regErr     error
	registered sync.Once

	ops sync.Map // operation name → *operation

	mu      sync.Mutex
	sources map[int]func() map[string]hedge.Measured
	counts  map[int]func() int64 // WatchOverBound's sources
	retired int64                // their counts when they were stopped, so that the sum never falls
	overMax int64                // the highest sum reported: a count read as it stops may be behind a collection's
	overSet bool                 // a count has been watched: from then on the series is reported, 0 or not
	nextID  int
}

// New returns the instruments of mp's meter for this package. A nil mp returns a nil
// *Metrics, which records nothing at no cost; so does a nil pointer to a provider (a
// *sdkmetric.MeterProvider variable left unset where metrics are off), which is not nil as
// an interface and would fail at its first use.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, nil
	}
	if v := reflect.ValueOf(mp); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, nil
	}
	m := &Metrics{meter: mp.Meter(ScopeName), sources: map[int]func() map[string]hedge.Measured{},
		counts: map[int]func() int64{}}
	var err, e error
	hist := func(name, desc string) metric.Float64Histogram {
		h, e := m.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(Buckets...))
		err = errors.Join(err, e)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, e := m.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	m.attemptDuration = hist("hedge.attempt.duration", "How long each attempt ran, until it answered or lost the race.")
	m.callDuration = hist("hedge.call.duration", "How long each call took, from its start to its answer.")
	m.calls = counter("hedge.calls", "{call}", "Calls finished, by outcome.")
	m.hedgesStarted = counter("hedge.hedges.started", "{hedge}", "Hedges sent.")
	m.hedgesWon = counter("hedge.hedges.won", "{hedge}", "Hedges that answered first.")
	m.discarded = counter("hedge.attempts.discarded", "{attempt}", "Attempts that lost the race and were cancelled.")
	m.suppressed = counter("hedge.hedges.suppressed", "{hedge}", "Hedges that were due but a gate refused, by reason.")
	m.retries = counter("hedge.retries", "{retry}", "Sequential retries scheduled.")
	m.limitRejections = counter("hedge.limit.rejections", "{attempt}", "Attempts the adaptive concurrency limit refused.")

	m.threshold, e = m.meter.Float64ObservableGauge("hedge.threshold", metric.WithUnit("s"),
		metric.WithDescription("The hedge delay a call starting now would use."))
	err = errors.Join(err, e)
	m.budget, e = m.meter.Float64ObservableGauge("hedge.budget.balance", metric.WithUnit("{attempt}"),
		metric.WithDescription("Hedges or retries the budget would fund now."))
	err = errors.Join(err, e)
	m.breaker, e = m.meter.Int64ObservableGauge("hedge.breaker.state", metric.WithUnit("1"),
		metric.WithDescription("1 for the circuit breaker's current state, 0 for the others."))
	err = errors.Join(err, e)
	m.errorRate, e = m.meter.Float64ObservableGauge("hedge.breaker.error_rate", metric.WithUnit("1"),
		metric.WithDescription("The breaker's failure ratio over its window."))
	err = errors.Join(err, e)
	m.limit, e = m.meter.Int64ObservableGauge("hedge.concurrency.limit", metric.WithUnit("{attempt}"),
		metric.WithDescription("The adaptive concurrency limit."))
	err = errors.Join(err, e)
	m.inFlight, e = m.meter.Int64ObservableGauge("hedge.concurrency.in_flight", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts holding a permit of the adaptive concurrency limit."))
	err = errors.Join(err, e)
	m.allowance, e = m.meter.Float64ObservableGauge("hedge.win_rate.allowance", metric.WithUnit("1"),
		metric.WithDescription("The share of would-be hedges the win-rate loop lets start."))
	err = errors.Join(err, e)
	m.overBound, e = m.meter.Int64ObservableCounter("hedge.calls.over_bound", metric.WithUnit("{call}"),
		metric.WithDescription("Calls sent once, unhedged, because the integration already kept its most policies (MaxKeys, MaxMethods)."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Attempt kinds, attempt outcomes and call outcomes, as indexes into an operation's
// precomputed options.
const (
	kindPrimary = iota
	kindHedge
	kindRetry
	numKinds
)

const (
	attemptOK = iota
	attemptError
	attemptDiscarded
	numAttemptOutcomes
)

const (
	callOK = iota
	callError
	callRejected
	callBreakerOpen
	callCancelled
	callUnreachable
	numCallOutcomes
)

var (
	kindNames           = [numKinds]string{"primary", "hedge", "retry"}
	attemptOutcomeNames = [numAttemptOutcomes]string{"ok", "error", "discarded"}
	callOutcomeNames    = [numCallOutcomes]string{"ok", "error", "rejected", "breaker_open", "cancelled", "unreachable"}
	breakerStates       = [...]string{"closed", "open", "half-open"}
)

// operation is one policy's attribute sets, built once so that recording allocates nothing.
type operation struct {
	name     string
	op       []metric.AddOption // hedge.operation only
	opRecord metric.MeasurementOption
	attempt  [numKinds][numAttemptOutcomes][]metric.RecordOption
	kind     [numKinds][]metric.AddOption
	callAdd  [numCallOutcomes][]metric.AddOption
	callRec  [numCallOutcomes][]metric.RecordOption
	reasons  map[hedge.Reason][]metric.AddOption
	breaker  [len(breakerStates)]metric.ObserveOption
}

func newOperation(name string) *operation {
	o := &operation{name: name, reasons: map[hedge.Reason][]metric.AddOption{}}
	opKV := KeyOperation.String(name)
	o.opRecord = metric.WithAttributeSet(attribute.NewSet(opKV))
	o.op = []metric.AddOption{o.opRecord}
	for k := range numKinds {
		o.kind[k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(opKV, KeyAttemptKind.String(kindNames[k])))}
		for out := range numAttemptOutcomes {
			o.attempt[k][out] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(opKV,
				KeyAttemptKind.String(kindNames[k]), KeyAttemptOut.String(attemptOutcomeNames[out])))}
		}
	}
	for c := range numCallOutcomes {
		set := metric.WithAttributeSet(attribute.NewSet(opKV, KeyCallOut.String(callOutcomeNames[c])))
		o.callAdd[c], o.callRec[c] = []metric.AddOption{set}, []metric.RecordOption{set}
	}
	for _, r := range hedge.Reasons() {
		o.reasons[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(opKV, KeyReason.String(r.String())))}
	}
	for i, s := range breakerStates {
		o.breaker[i] = metric.WithAttributeSet(attribute.NewSet(opKV, KeyBreaker.String(s)))
	}
	return o
}

// errNotBuilt is what a Metrics that New did not build fails with.
var errNotBuilt = errors.New("hedgeotel: Metrics used without New")

// built reports whether New built m (it always sets the meter); m is not nil.
func (m *Metrics) built() bool { return m.meter != nil }

func (m *Metrics) operation(name string) *operation {
	if o, ok := m.ops.Load(name); ok {
		return o.(*operation)
	}
	o, _ := m.ops.LoadOrStore(name, newOperation(name))
	return o.(*operation)
}

// Observer returns a Config.Observer that records the events of the policy named operation.
// On a nil *Metrics it returns nil (no observer, no cost).
func (m *Metrics) Observer(operation string) func(hedge.Event) {
	if m == nil {
		return nil
	}
	if !m.built() {
		panic(errNotBuilt.Error())
	}
	o := m.operation(operation)
	return func(e hedge.Event) { m.record(o, e) }
}

// KeyedObserver returns an observer for integrations that report each event with the name of
// the policy it belongs to (hedgehttp.Config.Observer, and the same shape in other
// integrations). On a nil *Metrics it returns nil.
func (m *Metrics) KeyedObserver() func(key string, e hedge.Event) {
	if m == nil {
		return nil
	}
	if !m.built() {
		panic(errNotBuilt.Error())
	}
	return func(key string, e hedge.Event) { m.record(m.operation(key), e) }
}

func kindOf(e hedge.Event) int {
	switch {
	case e.Hedge:
		return kindHedge
	case e.Retry:
		return kindRetry
	}
	return kindPrimary
}

func (m *Metrics) record(o *operation, e hedge.Event) {
	ctx := context.Background()
	switch e.Kind {
	case hedge.AttemptFinished:
		out := attemptOK
		if e.Err != nil {
			out = attemptError
		}
		m.attemptDuration.Record(ctx, e.Duration.Seconds(), o.attempt[kindOf(e)][out]...)
	case hedge.AttemptDiscarded:
		k := kindOf(e)
		m.attemptDuration.Record(ctx, e.Duration.Seconds(), o.attempt[k][attemptDiscarded]...)
		m.discarded.Add(ctx, 1, o.kind[k]...)
	case hedge.HedgeStarted:
		m.hedgesStarted.Add(ctx, 1, o.op...)
	case hedge.HedgeWon:
		m.hedgesWon.Add(ctx, 1, o.op...)
	case hedge.HedgeSuppressed:
		if opts, ok := o.reasons[e.Reason]; ok {
			m.suppressed.Add(ctx, 1, opts...)
		} else { // a reason newer than this operation's sets
			m.suppressed.Add(ctx, 1, metric.WithAttributes(KeyOperation.String(o.name), KeyReason.String(e.Reason.String())))
		}
		if e.Reason == hedge.ReasonLimit {
			m.limitRejections.Add(ctx, 1, o.kind[kindHedge]...)
		}
	case hedge.RetryScheduled:
		m.retries.Add(ctx, 1, o.op...)
	case hedge.CallFinished:
		c := callOutcome(e.Err)
		switch {
		case c == callRejected:
			m.limitRejections.Add(ctx, 1, o.kind[kindPrimary]...)
		case c == callError && retryRefusedByLimit(e.Err):
			m.limitRejections.Add(ctx, 1, o.kind[kindRetry]...) // a retry the limit refused
		}
		m.calls.Add(ctx, 1, o.callAdd[c]...)
		m.callDuration.Record(ctx, e.Duration.Seconds(), o.callRec[c]...)
	}
}

// retryRefusedByLimit reports whether a failed call ended because this policy's limit
// refused its retry: the Cause of its *AttemptsError. errors.Is on the whole error would
// also find an ErrLimitExceeded that an attempt's error wraps (another hedging layer's limit,
// which counts its own rejection), and count it against a policy that may have no limit.
func retryRefusedByLimit(err error) bool {
	var ae *hedge.AttemptsError
	return errors.As(err, &ae) && errors.Is(ae.Cause, hedge.ErrLimitExceeded)
}

// callOutcome classifies a finished call's error: nil is ok; the limit and the breaker
// refusing it before any attempt are rejected and breaker_open; no attempt reaching the
// dependency is unreachable; the caller giving up is cancelled; anything else (every attempt
// failed, a permanent failure) is error.
//
// Unreachable is the policy's own verdict, the Cause of its *AttemptsError: errors.Is on the
// whole error would also find an ErrUnreachable that an attempt's error wraps (an attempt
// made through another hedging layer), which says nothing about this call's attempts.
func callOutcome(err error) int {
	var ae *hedge.AttemptsError
	switch {
	case err == nil:
		return callOK
	case errors.As(err, &ae):
		if errors.Is(ae.Cause, hedge.ErrUnreachable) {
			return callUnreachable
		}
		return callError
	case errors.Is(err, hedge.ErrUnreachable):
		return callUnreachable
	case errors.Is(err, hedge.ErrLimitExceeded):
		return callRejected
	case errors.Is(err, hedge.ErrBreakerOpen):
		return callBreakerOpen
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return callCancelled
	}
	return callError
}

// Watch reports the gauges of the policies measured returns (name → figures, as
// hedgehttp.Transport.Measured does) at every collection, until stop is called. Names must
// be the ones the policies' events are recorded under. A panic in measured is recovered and
// returned as the collection's error; the other sources are reported as usual. On a nil
// *Metrics it does nothing.
func (m *Metrics) Watch(measured func() map[string]hedge.Measured) (stop func(), err error) {
	if m == nil || measured == nil {
		return func() {}, nil
	}
	id, err := m.watch(func(id int) { m.sources[id] = measured })
	if err != nil {
		return func() {}, err
	}
	return func() {
		m.mu.Lock()
		delete(m.sources, id)
		m.mu.Unlock()
	}, nil
}

// WatchOverBound adds count to hedge.calls.over_bound: the calls an integration sent once,
// unhedged, past its bound on policies (hedgehttp.Transport.OverMaxKeys,
// hedgegrpc.Interceptor.OverMaxMethods). [Metrics.NewTransport] watches its Transport's
// itself; an Interceptor's is watched with this:
//
//	stop, err := metrics.WatchOverBound(interceptor.OverMaxMethods)
//
// count must only grow. The reported figure is the sum of every watched count; stop ends
// count's reports and keeps its last value in the sum, so that the counter, cumulative,
// never falls when a Transport is closed. On a nil *Metrics, or with a nil count, it does
// nothing.
func (m *Metrics) WatchOverBound(count func() int64) (stop func(), err error) {
	if m == nil || count == nil {
		return func() {}, nil
	}
	id, err := m.watch(func(id int) { m.counts[id], m.overSet = count, true })
	if err != nil {
		return func() {}, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Read outside mu (count is the caller's code): a collection between the read and
			// the delete may report more than last, and overMax keeps the sum from falling.
			last, _ := countOf(count)
			m.mu.Lock()
			delete(m.counts, id)
			m.retired += last
			m.mu.Unlock()
		})
	}, nil
}

// watch installs the callback (register) and then runs add, under mu, with a new source's
// id, which it returns.
func (m *Metrics) watch(add func(id int)) (int, error) {
	if err := m.register(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextID
	m.nextID++
	add(id)
	return id, nil
}

// register installs the gauges' and over_bound's callback with the MeterProvider, once.
func (m *Metrics) register() error {
	if !m.built() {
		return errNotBuilt
	}
	m.registered.Do(func() {
		m.reg, m.regErr = m.meter.RegisterCallback(m.observe, m.threshold, m.budget, m.breaker,
			m.errorRate, m.limit, m.inFlight, m.allowance, m.overBound)
	})
	return m.regErr
}

// unregister removes the gauges' callback from the MeterProvider, for a Metrics no one else
// can reach (the one NewPolicy builds).
func (m *Metrics) unregister() {
	m.registered.Do(func() {}) // no registration can start after this
	if m.reg != nil {
		m.reg.Unregister()
	}
}

func (m *Metrics) observe(_ context.Context, obs metric.Observer) error {
	m.mu.Lock()
	sources := make([]func() map[string]hedge.Measured, 0, len(m.sources))
	for _, s := range m.sources {
		sources = append(sources, s)
	}
	counts := make([]func() int64, 0, len(m.counts))
	for _, c := range m.counts {
		counts = append(counts, c)
	}
	over, watched := m.retired, m.overSet
	m.mu.Unlock()
	var errs []error
	for _, c := range counts {
		n, err := countOf(c)
		if err != nil {
			errs = append(errs, err)
		}
		over += n
	}
	if watched {
		m.mu.Lock()
		over = max(over, m.overMax)
		m.overMax = over
		m.mu.Unlock()
		obs.ObserveInt64(m.overBound, over)
	}
	for _, s := range sources {
		figures, err := measure(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, f := range figures {
			o := m.operation(name)
			if f.Warm {
				obs.ObserveFloat64(m.threshold, f.Threshold.Seconds(), o.opRecord)
			}
			if !math.IsInf(f.Budget, 0) && !math.IsNaN(f.Budget) {
				obs.ObserveFloat64(m.budget, f.Budget, o.opRecord)
			}
			if f.Breaker != "" {
				for i, s := range breakerStates {
					v := int64(0)
					if s == f.Breaker {
						v = 1
					}
					obs.ObserveInt64(m.breaker, v, o.breaker[i])
				}
				obs.ObserveFloat64(m.errorRate, f.ErrorRate, o.opRecord)
			}
			if f.Limit > 0 {
				obs.ObserveInt64(m.limit, int64(f.Limit), o.opRecord)
				obs.ObserveInt64(m.inFlight, int64(f.InFlight), o.opRecord)
			}
			obs.ObserveFloat64(m.allowance, f.WinRateAllowance, o.opRecord)
		}
	}
	return errors.Join(errs...)
}

// measure calls a source given to Watch, turning a panic into the collection's error: the
// callback runs on the SDK's goroutine (a periodic reader's), where a panic would end the
// process, and the other sources' gauges are still reported.
func measure(s func() map[string]hedge.Measured) (figures map[string]hedge.Measured, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("hedgeotel: a Watch source panicked: %v", x)
		}
	}()
	return s(), nil
}

// countOf calls a count given to WatchOverBound, turning a panic into the collection's error
// (see measure) and a negative count, which a counter cannot take, into 0.
func countOf(c func() int64) (n int64, err error) {
	defer func() {
		if x := recover(); x != nil {
			n, err = 0, fmt.Errorf("hedgeotel: a WatchOverBound count panicked: %v", x)
		}
	}()
	return max(c(), 0), nil
}

// NewPolicy builds a policy from cfg whose events and figures are recorded under the name
// operation. cfg.Observer, when set, still receives every event. On a nil *Metrics it is
// hedge.New(cfg), with a stop that does nothing.
//
// The policy's gauges are reported at every collection until stop is called, and the
// Metrics holds on to the policy until then: build policies once, as hedge asks anyway, and
// call stop for one you drop (a per-tenant policy whose tenant left), or its gauges report
// for as long as the Metrics lives. The counters and histograms record the policy's events
// whether or not its gauges were stopped.
func (m *Metrics) NewPolicy(operation string, cfg hedge.Config) (p *hedge.Policy, stop func(), err error) {
	if m == nil {
		p, err = hedge.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return p, func() {}, nil
	}
	if !m.built() {
		return nil, nil, errNotBuilt
	}
	cfg.Observer = chain(cfg.Observer, m.Observer(operation))
	if p, err = hedge.New(cfg); err != nil {
		return nil, nil, err
	}
	if stop, err = m.Watch(func() map[string]hedge.Measured { return map[string]hedge.Measured{operation: p.Measured()} }); err != nil {
		return nil, nil, err
	}
	return p, stop, nil
}

// NewTransport builds a [hedgehttp.Transport] whose per-host policies are recorded under
// their host keys (see hedgehttp.Config.Key). cfg.Observer, when set, still receives every
// event. On a nil *Metrics it is hedgehttp.NewTransport(cfg).
//
// The Transport's gauges are reported at every collection until its Close, and the Metrics
// holds on to it until then: Close a Transport you drop, or its gauges go on reporting (and
// a new Transport's figures for the same hosts would share their series). Its requests past
// Config.MaxKeys are counted in hedge.calls.over_bound (see [Metrics.WatchOverBound]).
func (m *Metrics) NewTransport(cfg hedgehttp.Config) (*hedgehttp.Transport, error) {
	if m == nil {
		return hedgehttp.NewTransport(cfg)
	}
	if !m.built() {
		return nil, errNotBuilt
	}
	cfg.Observer = chainKeyed(cfg.Observer, m.KeyedObserver())
	tr, err := hedgehttp.NewTransport(cfg)
	if err != nil {
		return nil, err
	}
	stop, err := m.Watch(tr.Measured)
	if err != nil {
		tr.Close()
		return nil, err
	}
	stopOver, err := m.WatchOverBound(tr.OverMaxKeys)
	if err != nil {
		stop()
		tr.Close()
		return nil, err
	}
	tr.OnClose(func() { stop(); stopOver() })
	return tr, nil
}

// NewPolicy is New(mp) followed by [Metrics.NewPolicy]: one call for one policy. A nil mp
// builds the policy without metrics, at no cost. stop ends the reports of the policy's gauges
// (see Metrics.NewPolicy) and unregisters their callback from mp.
func NewPolicy(mp metric.MeterProvider, operation string, cfg hedge.Config) (p *hedge.Policy, stop func(), err error) {
	m, err := New(mp)
	if err != nil {
		return nil, nil, err
	}
	p, unwatch, err := m.NewPolicy(operation, cfg)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		return p, unwatch, nil
	}
	return p, func() { unwatch(); m.unregister() }, nil
}

// NewTransport is New(mp) followed by [Metrics.NewTransport]: one call for a hedging HTTP
// client's transport. A nil mp builds it without metrics, at no cost. The Transport's Close
// ends the reports of its gauges and unregisters their callback from mp.
func NewTransport(mp metric.MeterProvider, cfg hedgehttp.Config) (*hedgehttp.Transport, error) {
	m, err := New(mp)
	if err != nil {
		return nil, err
	}
	tr, err := m.NewTransport(cfg)
	if err != nil || m == nil {
		return tr, err
	}
	tr.OnClose(m.unregister)
	return tr, nil
}

func chain(a, b func(hedge.Event)) func(hedge.Event) {
	if a == nil {
		return b
	}
	return func(e hedge.Event) { a(e); b(e) }
}

func chainKeyed(a, b func(string, hedge.Event)) func(string, hedge.Event) {
	if a == nil {
		return b
	}
	return func(k string, e hedge.Event) { a(k, e); b(k, e) }
}
