package hedgeotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

// A Transport's requests past Config.MaxKeys, sent unhedged, are counted in one series with
// no attributes, and the count stays after the Transport is closed: a cumulative counter must
// not fall.
func TestTransportCountsRequestsOverMaxKeys(t *testing.T) {
	checkGoroutines(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := m.NewTransport(hedgehttp.Config{Policy: hedge.Config{Trigger: hedge.After(time.Hour)}, MaxKeys: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := sums(t, collect(t, reader), "hedge.calls.over_bound"); len(got) != 1 || got[""] != 0 {
		t.Fatalf("before any call: over_bound %v, want one series at 0", got)
	}
	client := &http.Client{Transport: tr}
	get := func(url string) {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) // the same server, another key
	get(srv.URL)                                                   // the one key the bound allows
	get(other)
	get(other)
	if tr.OverMaxKeys() != 2 {
		t.Fatalf("OverMaxKeys = %d, want 2", tr.OverMaxKeys())
	}
	ms := collect(t, reader)
	equal(t, "hedge.calls.over_bound", sums(t, ms, "hedge.calls.over_bound"), map[string]int64{"": 2})
	// The calls that went over belong to no operation: the host's series counts only its own.
	equal(t, "hedge.calls", sums(t, ms, "hedge.calls"), map[string]int64{
		"hedge.operation=" + srv.URL + ",hedge.call.outcome=ok": 1,
	})
	tr.Close()
	equal(t, "after Close", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 2})
	second, err := m.NewTransport(hedgehttp.Config{Policy: hedge.Config{Trigger: hedge.After(time.Hour)}, MaxKeys: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	client.Transport = second
	get(srv.URL)
	get(other)
	equal(t, "two Transports", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 3})
}

// A Metrics that watches only policies reports no over_bound series: it would read as a
// bound that nothing has.
func TestOverBoundAbsentWithoutATransport(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	_, stop, err := hedgeotel.NewPolicy(mp, "users", hedge.Config{Trigger: hedge.After(time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ms := collect(t, reader)
	if _, ok := ms["hedge.win_rate.allowance"]; !ok {
		t.Fatal("the policy's gauges are missing: nothing was collected")
	}
	if got, ok := ms["hedge.calls.over_bound"]; ok {
		t.Errorf("over_bound reported with no Transport or Interceptor watched: %v", got)
	}
}

// WatchOverBound sums its counts; a count that panics is the collection's error while the
// others are still reported; a negative count reads as 0; a count read behind what was
// reported, as it stops, does not make the counter fall; a nil Metrics or count does nothing;
// a Metrics not built by New says so.
func TestWatchOverBound(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	var a atomic.Int64
	a.Store(5)
	stopA, err := m.WatchOverBound(a.Load)
	if err != nil {
		t.Fatal(err)
	}
	stopB, err := m.WatchOverBound(func() int64 { return 7 })
	if err != nil {
		t.Fatal(err)
	}
	stopNeg, err := m.WatchOverBound(func() int64 { return -100 })
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "sum", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 12})

	stopPanic, err := m.WatchOverBound(func() int64 { panic("boom") })
	if err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a panicking count: collection error %v, want one naming the panic", err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name == "hedge.calls.over_bound" {
				found = mt.Data.(metricdata.Sum[int64]).DataPoints[0].Value == 12
			}
		}
	}
	if !found {
		t.Error("the other counts were not reported beside the panicking one")
	}
	stopPanic()
	stopPanic() // twice is harmless

	a.Store(3) // behind what was reported: read as it stops, it must not lower the sum
	stopA()
	stopA()
	equal(t, "after a count stopped behind", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 12})
	stopB()
	stopNeg()
	equal(t, "all stopped", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 12})

	var none *hedgeotel.Metrics
	if stop, err := none.WatchOverBound(a.Load); err != nil || stop == nil {
		t.Errorf("nil Metrics: stop is nil or err %v", err)
	} else {
		stop()
	}
	if stop, err := m.WatchOverBound(nil); err != nil || stop == nil {
		t.Errorf("nil count: stop is nil or err %v", err)
	} else {
		stop()
	}
	if _, err := new(hedgeotel.Metrics).WatchOverBound(a.Load); err == nil || !strings.Contains(err.Error(), "New") {
		t.Errorf("zero Metrics: err %v, want one naming New", err)
	}
}

// A counter once reported stays reported: a source that counted nothing and stopped (a
// Transport closed before any call went past its bound) leaves the series at 0, not gone, so
// that a query of its rate sees a 0 rather than no data.
func TestOverBoundStaysAtZeroAfterItsSourcesStop(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := m.WatchOverBound(func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "watched", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 0})
	stop()
	equal(t, "stopped", sums(t, collect(t, reader), "hedge.calls.over_bound"), map[string]int64{"": 0})
}
