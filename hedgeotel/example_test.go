package hedgeotel_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgegrpc"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

// One call builds a policy whose events and figures go to a MeterProvider. (A real program
// uses an exporter's reader, Prometheus or OTLP, instead of the ManualReader.)
func ExampleNewPolicy() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	users, stop, err := hedgeotel.NewPolicy(provider, "users", hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	if err != nil {
		log.Fatal(err)
	}
	defer stop() // only for a policy dropped before the program ends: its gauges stop reporting

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

// One call for a hedging HTTP client: every host's policy is recorded under its host key.
func ExampleNewTransport() {
	provider := sdkmetric.NewMeterProvider() // with your exporter's reader
	tr, err := hedgeotel.NewTransport(provider, hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		// Optional: each attempt its own client span, hedges and retries marked with
		// http.request.resend_count.
		Next: otelhttp.NewTransport(hedgeotel.AttemptSpans(nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	fmt.Println(client.Transport != nil)
	// Output: true
}

// Any integration that reports events with a name and lists its policies' figures is wired
// in four lines: here hedgegrpc's per-method policies, recorded under their full method
// names, and the calls past its bound on methods (hedgegrpc.Config.MaxMethods).
func ExampleMetrics_KeyedObserver() {
	metrics, err := hedgeotel.New(sdkmetric.NewMeterProvider())
	if err != nil {
		log.Fatal(err)
	}
	cfg := hedgegrpc.Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}}
	cfg.Observer = metrics.KeyedObserver()
	interceptor, err := hedgegrpc.NewInterceptor(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := metrics.Watch(interceptor.Measured); err != nil {
		log.Fatal(err)
	}
	if _, err := metrics.WatchOverBound(interceptor.OverMaxMethods); err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient("dns:///inventory.internal:443",
		append(interceptor.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	fmt.Println(conn.CanonicalTarget())
	// Output: dns:///inventory.internal:443
}
