package hedgeotel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeotel"
)

// A source given to Watch that panics (a function of the user's that reads a map of
// policies) makes the collection fail with an error naming the panic; the other sources'
// gauges are still reported. Before, the panic went through the SDK's collection: with a
// PeriodicReader, on the SDK's own goroutine, it ended the process.
func TestWatchSourcePanicIsAnError(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := hedgeotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	stopBad, err := m.Watch(func() map[string]hedge.Measured { panic("source boom") })
	if err != nil {
		t.Fatal(err)
	}
	defer stopBad()
	stopGood, err := m.Watch(func() map[string]hedge.Measured {
		return map[string]hedge.Measured{"a": {WinRateAllowance: 0.5}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopGood()
	var rm metricdata.ResourceMetrics
	var collectErr error
	func() {
		defer func() {
			if x := recover(); x != nil {
				collectErr = fmt.Errorf("Collect panicked: %v", x)
				t.Errorf("Collect with a panicking Watch source panicked: %v", x)
			}
		}()
		collectErr = reader.Collect(context.Background(), &rm)
	}()
	if collectErr == nil || !strings.Contains(collectErr.Error(), "source boom") {
		t.Errorf("Collect: error %v, want one naming the source's panic", collectErr)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if g, ok := mt.Data.(metricdata.Gauge[float64]); ok && mt.Name == "hedge.win_rate.allowance" {
				for _, dp := range g.DataPoints {
					if v, _ := dp.Attributes.Value(hedgeotel.KeyOperation); v.AsString() == "a" && dp.Value == 0.5 {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Error("the other source's gauge was not reported")
	}
}
