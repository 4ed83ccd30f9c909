package hedgeotel_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeotel"
)

// One call builds a policy whose events and figures go to a MeterProvider. (A real program
// uses an exporter's reader, Prometheus or OTLP, instead of the ManualReader.)
func ExampleNewPolicy() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	users, err := hedgeotel.NewPolicy(provider, "users", hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	if err != nil {
		log.Fatal(err)
	}

	for range 3 {
		hedge.Do(context.Background(), users, func(ctx context.Context) (string, error) {
			return "ada", nil
		})
	}
	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "hedge.calls" {
			dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			op, _ := dp.Attributes.Value(hedgeotel.KeyOperation)
			outcome, _ := dp.Attributes.Value(hedgeotel.KeyCallOut)
			fmt.Printf("%s{operation=%s, outcome=%s} %d\n", m.Name, op.AsString(), outcome.AsString(), dp.Value)
		}
	}
	// Output: hedge.calls{operation=users, outcome=ok} 3
}
