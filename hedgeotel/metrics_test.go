package hedgeotel_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
	"github.com/hedgekit/hedge/limit"
)

// collect reads every metric through the SDK's ManualReader, keyed by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != hedgeotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// attrs renders an attribute set as "k=v,k=v", hedge.operation first and the others
// sorted, to key data points.
func attrs(s attribute.Set) string {
	var first string
	var parts []string
	for _, kv := range s.ToSlice() {
		if kv.Key == hedgeotel.KeyOperation {
			first = string(kv.Key) + "=" + kv.Value.String()
			continue
		}
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	slices.Sort(parts)
	return strings.Join(append([]string{first}, parts...), ",")
}

// sums returns a counter's values by attribute set.
func sums(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !s.IsMonotonic {
		t.Fatalf("%s is %T, want a monotonic Sum[int64]", name, m.Data)
	}
	out := map[string]int64{}
	for _, dp := range s.DataPoints {
		out[attrs(dp.Attributes)] = dp.Value
	}
	return out
}

func gauges[N int64 | float64](t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]N {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	g, ok := m.Data.(metricdata.Gauge[N])
	if !ok {
		t.Fatalf("%s is %T", name, m.Data)
	}
	out := map[string]N{}
	for _, dp := range g.DataPoints {
		out[attrs(dp.Attributes)] = dp.Value
	}
	return out
}

// histogram returns a histogram's data points by attribute set.
func histogram(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T", name, m.Data)
	}
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, dp := range h.DataPoints {
		out[attrs(dp.Attributes)] = dp
	}
	return out
}

func equal[V comparable](t *testing.T, name string, got, want map[string]V) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", name, got, want)
		return
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v, want %v", name, got, want)
			return
		}
	}
}

// bucketOf is the index of the bucket holding v seconds (upper bounds inclusive).
func bucketOf(v float64) int {
	for i, b := range hedgeotel.Buckets {
		if v <= b {
			return i
		}
	}
	return len(hedgeotel.Buckets)
}

// onlyBucket asserts a histogram point holds count values, all in the bucket of seconds.
func onlyBucket(t *testing.T, name string, dp metricdata.HistogramDataPoint[float64], count uint64, seconds float64) {
	t.Helper()
	if dp.Count != count {
		t.Errorf("%s: count %d, want %d", name, dp.Count, count)
	}
	if len(dp.BucketCounts) != len(hedgeotel.Buckets)+1 {
		t.Fatalf("%s: %d buckets, want %d", name, len(dp.BucketCounts), len(hedgeotel.Buckets)+1)
	}
	want := make([]uint64, len(hedgeotel.Buckets)+1)
	want[bucketOf(seconds)] = count
	if !slices.Equal(dp.BucketCounts, want) {
		t.Errorf("%s: buckets %v, want %v", name, dp.BucketCounts, want)
	}
}

const (
	op         = "hedge.operation=users"
	primary    = op + ",hedge.attempt.kind=primary"
	hedgeKind  = op + ",hedge.attempt.kind=hedge"
	retryKind  = op + ",hedge.attempt.kind=retry"
	limitedOp  = "hedge.operation=limited"
	callOKAttr = op + ",hedge.call.outcome=ok"
)

// TestScriptedCalls drives calls on explicit time and reads back every figure.
func TestScriptedCalls(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := hedgeotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	// A budget that holds exactly one withdrawal: no deposits count, a reserve of one.
	p, _, err := m.NewPolicy("users", hedge.Config{
		Trigger:  hedge.After(20 * time.Millisecond),
		Budget:   budget.Config{Ratio: budget.Zero, MinPerSecond: 0.1},
		Breaker:  &breaker.Config{},
		Observer: func(hedge.Event) { seen++ }, // the caller's own observer still runs
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Second) // the gauges read the policies at time.Now()
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }

	// 1. The primary is stuck; the hedge, sent at 20ms, wins at 22ms; the primary is
	//    discarded after 22ms.
	c := p.NewCall(hedge.CallOptions{})
	c.Start(at(0))
	c.TimerFired(at(20))
	c.AttemptDone(at(22), 1, hedge.Outcome{Class: hedge.Success})
	// 2. The primary answers in 5ms.
	c = p.NewCall(hedge.CallOptions{})
	c.Start(at(100))
	c.AttemptDone(at(105), 0, hedge.Outcome{Class: hedge.Success})
	// 3. The hedge is due but the budget is spent; the primary fails after 400ms and the
	//    retry is refused for the same reason.
	c = p.NewCall(hedge.CallOptions{})
	c.Start(at(200))
	c.TimerFired(at(220))
	c.AttemptDone(at(600), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503")})

	// 4. A limit of one: the second concurrent call is rejected before any attempt, and a
	//    retry of the first one is refused too.
	lim, _, err := m.NewPolicy("limited", hedge.Config{Attempts: 2, Budget: budget.Config{Off: true},
		Backoff: hedge.Backoff{Jitter: hedge.Off},
		Limit:   &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	held := lim.NewCall(hedge.CallOptions{})
	held.Start(at(0))
	rejected := lim.NewCall(hedge.CallOptions{})
	rejected.Start(at(1))
	if !errors.Is(rejected.Err(), hedge.ErrLimitExceeded) {
		t.Fatalf("second call: %v, want ErrLimitExceeded", rejected.Err())
	}
	blocker := lim.NewCall(hedge.CallOptions{})
	held.AttemptDone(at(2), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("reset")}) // retry armed at 12ms
	blocker.Start(at(3))                                                                        // takes the only permit
	held.TimerFired(at(12))                                                                     // the retry finds none

	ms := collect(t, reader)
	equal(t, "hedge.calls", sums(t, ms, "hedge.calls"), map[string]int64{
		callOKAttr:                                 2,
		op + ",hedge.call.outcome=error":           1,
		limitedOp + ",hedge.call.outcome=rejected": 1,
		limitedOp + ",hedge.call.outcome=error":    1,
	})
	equal(t, "hedge.hedges.started", sums(t, ms, "hedge.hedges.started"), map[string]int64{op: 1})
	equal(t, "hedge.hedges.won", sums(t, ms, "hedge.hedges.won"), map[string]int64{op: 1})
	equal(t, "hedge.attempts.discarded", sums(t, ms, "hedge.attempts.discarded"), map[string]int64{primary: 1})
	equal(t, "hedge.hedges.suppressed", sums(t, ms, "hedge.hedges.suppressed"), map[string]int64{op + ",hedge.suppression.reason=budget": 1})
	equal(t, "hedge.retries", sums(t, ms, "hedge.retries"), map[string]int64{limitedOp: 1})
	equal(t, "hedge.limit.rejections", sums(t, ms, "hedge.limit.rejections"), map[string]int64{
		limitedOp + ",hedge.attempt.kind=primary": 1,
		limitedOp + ",hedge.attempt.kind=retry":   1,
	})

	att := histogram(t, ms, "hedge.attempt.duration")
	if len(att) != 5 {
		t.Errorf("hedge.attempt.duration has %d series, want 5: %v", len(att), att)
	}
	onlyBucket(t, "hedge attempt ok", att[hedgeKind+",hedge.attempt.outcome=ok"], 1, 0.002)
	onlyBucket(t, "primary attempt discarded", att[primary+",hedge.attempt.outcome=discarded"], 1, 0.022)
	onlyBucket(t, "primary attempt error", att[primary+",hedge.attempt.outcome=error"], 1, 0.4)
	if dp := att[primary+",hedge.attempt.outcome=ok"]; dp.Count != 1 || dp.Sum != 0.005 || dp.BucketCounts[bucketOf(0.005)] != 1 {
		t.Errorf("primary attempt ok: %+v", dp)
	}
	calls := histogram(t, ms, "hedge.call.duration")
	if dp := calls[callOKAttr]; dp.Count != 2 || dp.BucketCounts[bucketOf(0.022)] != 1 || dp.BucketCounts[bucketOf(0.005)] != 1 {
		t.Errorf("ok calls: %+v", dp)
	}
	onlyBucket(t, "failed call", calls[op+",hedge.call.outcome=error"], 1, 0.4)

	equal(t, "hedge.threshold", gauges[float64](t, ms, "hedge.threshold"), map[string]float64{op: 0.02})
	equal(t, "hedge.budget.balance", gauges[float64](t, ms, "hedge.budget.balance"), map[string]float64{op: 0})
	equal(t, "hedge.breaker.state", gauges[int64](t, ms, "hedge.breaker.state"), map[string]int64{
		op + ",hedge.breaker.state=closed": 1, op + ",hedge.breaker.state=open": 0, op + ",hedge.breaker.state=half-open": 0,
	})
	equal(t, "hedge.breaker.error_rate", gauges[float64](t, ms, "hedge.breaker.error_rate"), map[string]float64{op: 1.0 / 3})
	equal(t, "hedge.concurrency.limit", gauges[int64](t, ms, "hedge.concurrency.limit"), map[string]int64{limitedOp: 1})
	equal(t, "hedge.concurrency.in_flight", gauges[int64](t, ms, "hedge.concurrency.in_flight"), map[string]int64{limitedOp: 1})
	equal(t, "hedge.win_rate.allowance", gauges[float64](t, ms, "hedge.win_rate.allowance"), map[string]float64{op: 1, limitedOp: 1})

	for name, want := range map[string]string{"hedge.attempt.duration": "s", "hedge.threshold": "s", "hedge.calls": "{call}",
		"hedge.hedges.suppressed": "{hedge}", "hedge.breaker.error_rate": "1", "hedge.concurrency.limit": "{attempt}"} {
		if got := ms[name].Unit; got != want {
			t.Errorf("%s unit %q, want %q", name, got, want)
		}
	}
	if seen == 0 {
		t.Error("the policy's own observer was replaced")
	}
}

// TestTransport wires a hedgehttp.Transport in one call and reads its per-host figures.
func TestTransport(t *testing.T) {
	checkGoroutines(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var keyed int
	tr, err := hedgeotel.NewTransport(mp, hedgehttp.Config{
		Policy:   hedge.Config{Trigger: hedge.AtQuantile(0.95), Backoff: hedge.Backoff{Initial: time.Microsecond}, Budget: budget.Config{Off: true}},
		Observer: func(string, hedge.Event) { keyed++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	for _, path := range []string{"/", "/", "/fail"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	host := "hedge.operation=" + srv.URL // the host key: scheme://host:port
	ms := collect(t, reader)
	equal(t, "hedge.calls", sums(t, ms, "hedge.calls"), map[string]int64{
		host + ",hedge.call.outcome=ok":    2,
		host + ",hedge.call.outcome=error": 1, // a 500, retried once, then returned
	})
	equal(t, "hedge.retries", sums(t, ms, "hedge.retries"), map[string]int64{host: 1})
	att := histogram(t, ms, "hedge.attempt.duration")
	if att[host+",hedge.attempt.kind=primary,hedge.attempt.outcome=ok"].Count != 2 ||
		att[host+",hedge.attempt.kind=primary,hedge.attempt.outcome=error"].Count != 1 ||
		att[host+",hedge.attempt.kind=retry,hedge.attempt.outcome=error"].Count != 1 {
		t.Errorf("attempt durations: %v", att)
	}
	// Cold (three samples of twenty): no threshold yet; unlimited budget: no balance.
	if g := gauges[float64](t, ms, "hedge.threshold"); len(g) != 0 {
		t.Errorf("cold threshold reported: %v", g)
	}
	if g := gauges[float64](t, ms, "hedge.budget.balance"); len(g) != 0 {
		t.Errorf("unlimited budget reported: %v", g)
	}
	equal(t, "hedge.win_rate.allowance", gauges[float64](t, ms, "hedge.win_rate.allowance"), map[string]float64{host: 1})
	if keyed == 0 {
		t.Error("the transport's own observer was replaced")
	}
}

// With no provider nothing is installed: a nil *Metrics records nothing and its observers
// are nil, so the policy's Observer stays nil.
func TestNilProvider(t *testing.T) {
	m, err := hedgeotel.New(nil)
	if m != nil || err != nil {
		t.Fatalf("New(nil) = %v, %v", m, err)
	}
	if m.Observer("x") != nil || m.KeyedObserver() != nil {
		t.Error("a nil Metrics has observers")
	}
	// A nil pointer to a provider is no provider either, not a panic at the first call.
	var unset *sdkmetric.MeterProvider
	if m, err := hedgeotel.New(unset); m != nil || err != nil {
		t.Fatalf("New(nil *MeterProvider) = %v, %v", m, err)
	}
	if p, stop, err := hedgeotel.NewPolicy(unset, "users", hedge.Config{Trigger: hedge.After(time.Millisecond)}); err != nil || p == nil {
		t.Fatal(p, err)
	} else {
		stop()
	}
	stop, err := m.Watch(func() map[string]hedge.Measured { return nil })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	p, _, err := hedgeotel.NewPolicy(nil, "users", hedge.Config{Trigger: hedge.After(time.Millisecond)})
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	if raceEnabled {
		// Under the race detector sync.Pool drops what it is given at random, so a call's
		// allocations vary from run to run (the pooled driver); the count is checked in the
		// run without it.
		return
	}
	plain := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Millisecond)})
	do := func(p *hedge.Policy) func() {
		return func() {
			hedge.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
		}
	}
	if a, b := testing.AllocsPerRun(200, do(plain)), testing.AllocsPerRun(200, do(p)); a != b {
		t.Errorf("a call allocates %v times without metrics, %v with a nil provider", a, b)
	}
}

// Watch stops reporting a source once stopped.
func TestWatchStop(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := m.Watch(func() map[string]hedge.Measured {
		return map[string]hedge.Measured{"a": {WinRateAllowance: 0.5, Limit: 7, InFlight: 2}}
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := collect(t, reader)
	equal(t, "allowance", gauges[float64](t, ms, "hedge.win_rate.allowance"), map[string]float64{"hedge.operation=a": 0.5})
	equal(t, "limit", gauges[int64](t, ms, "hedge.concurrency.limit"), map[string]int64{"hedge.operation=a": 7})
	stop()
	ms = collect(t, reader)
	if g := gauges[float64](t, ms, "hedge.win_rate.allowance"); len(g) != 0 {
		t.Errorf("after stop: %v", g)
	}
}

// A call none of whose attempts reached the dependency is unreachable, not an error of it.
func TestUnreachableCall(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	p, _, err := hedgeotel.NewPolicy(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "users", hedge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := p.NewCall(hedge.CallOptions{})
	c.Start(now)
	for k := 0; !c.Done() && k < 10; k++ {
		c.AttemptDone(now, k, hedge.Outcome{Class: hedge.Retriable, Unsent: true, Err: errors.New("connection refused")})
	}
	if !errors.Is(c.Err(), hedge.ErrUnreachable) {
		t.Fatalf("call error %v, want ErrUnreachable", c.Err())
	}
	equal(t, "hedge.calls", sums(t, collect(t, reader), "hedge.calls"), map[string]int64{op + ",hedge.call.outcome=unreachable": 1})
}

// hedge.hedges.suppressed counts hedges that were due: a call to a cold policy that answers
// before MinimumDelay (the lowest threshold there can be) was never due one, and is not
// counted as suppressed "cold"; one still running then is.
func TestColdCountsOnlyCallsThatWereDueAHedge(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	p, _, err := hedgeotel.NewPolicy(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "users",
		hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumDelay: 10 * time.Millisecond})})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
	for i := range 5 { // five fast calls: no hedge was due
		c := p.NewCall(hedge.CallOptions{})
		c.Start(at(10 * i))
		c.AttemptDone(at(10*i+3), 0, hedge.Outcome{})
	}
	for i := range 2 { // two slow ones: each reaches MinimumDelay while the policy is cold
		c := p.NewCall(hedge.CallOptions{})
		for _, a := range c.Start(at(100 * (i + 1))) {
			if a.Kind == hedge.ArmTimer {
				c.TimerFired(a.At)
			}
		}
		c.AttemptDone(at(100*(i+1)+40), 0, hedge.Outcome{})
	}
	equal(t, "hedge.hedges.suppressed", sums(t, collect(t, reader), "hedge.hedges.suppressed"),
		map[string]int64{op + ",hedge.suppression.reason=cold": 2})
}

// NewPolicy's stop ends the policy's gauges; its events are still recorded.
func TestNewPolicyStop(t *testing.T) {
	for _, shared := range []bool{false, true} {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		newPolicy := func(name string) (*hedge.Policy, func()) {
			var p *hedge.Policy
			var stop func()
			var err error
			if shared {
				m, _ := hedgeotel.New(mp)
				p, stop, err = m.NewPolicy(name, hedge.Config{Trigger: hedge.After(time.Millisecond)})
			} else {
				p, stop, err = hedgeotel.NewPolicy(mp, name, hedge.Config{Trigger: hedge.After(time.Millisecond)})
			}
			if err != nil {
				t.Fatal(err)
			}
			return p, stop
		}
		p, stop := newPolicy("users")
		_, stayStop := newPolicy("orders")
		defer stayStop()
		ms := collect(t, reader)
		equal(t, "threshold before stop", gauges[float64](t, ms, "hedge.threshold"),
			map[string]float64{"hedge.operation=users": 0.001, "hedge.operation=orders": 0.001})
		stop()
		stop() // a second stop does nothing
		hedge.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
		ms = collect(t, reader)
		equal(t, "threshold after stop", gauges[float64](t, ms, "hedge.threshold"), map[string]float64{"hedge.operation=orders": 0.001})
		equal(t, "calls after stop", sums(t, ms, "hedge.calls"), map[string]int64{"hedge.operation=users,hedge.call.outcome=ok": 1})
	}
	if _, stop, err := hedgeotel.NewPolicy(nil, "users", hedge.Config{}); err != nil || stop == nil {
		t.Fatalf("NewPolicy(nil): stop is nil %v, err %v; want a stop that does nothing", stop == nil, err)
	} else {
		stop()
	}
}

// A Transport's gauges end with its Close: a Transport that replaces a closed one on the
// same Metrics reports its own figures for the host, alone; and the one-call NewTransport's
// Close leaves no callback behind on the provider.
func TestTransportGaugesEndWithClose(t *testing.T) {
	checkGoroutines(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := hedgeotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	withLimit := func(initial int) hedgehttp.Config {
		return hedgehttp.Config{Policy: hedge.Config{Trigger: hedge.After(time.Hour),
			Limit: &limit.Config{InitialLimit: initial, MinLimit: 1, MaxLimit: 1000}}}
	}
	call := func(tr *hedgehttp.Transport) {
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	old, err := m.NewTransport(withLimit(7))
	if err != nil {
		t.Fatal(err)
	}
	call(old)
	if g := gauges[int64](t, collect(t, reader), "hedge.concurrency.limit"); len(g) != 1 {
		t.Fatalf("before Close: limit gauges %v, want the one host's", g)
	}
	old.Close()
	if g := gauges[int64](t, collect(t, reader), "hedge.concurrency.limit"); len(g) != 0 {
		t.Fatalf("after Close: limit gauges %v, want none", g)
	}
	now, err := m.NewTransport(withLimit(42))
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	call(now)
	for range 10 {
		for _, v := range gauges[int64](t, collect(t, reader), "hedge.concurrency.limit") {
			if v != 42 {
				t.Fatalf("the host's limit read %d, want the new Transport's 42", v)
			}
		}
	}

	one, err := hedgeotel.NewTransport(mp, withLimit(9))
	if err != nil {
		t.Fatal(err)
	}
	call(one)
	one.Close()
	for _, v := range gauges[int64](t, collect(t, reader), "hedge.concurrency.limit") {
		if v == 9 {
			t.Fatal("the one-call NewTransport's gauges report after its Close")
		}
	}
}
