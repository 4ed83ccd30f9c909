package hedgeotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeotel"
)

// BenchmarkDo measures one call that answers at once (no hedge), under a policy built
// without this package, with a nil MeterProvider, and with the SDK recording every event.
// The first two must allocate the same: no provider, no cost.
func BenchmarkDo(b *testing.B) {
	cfg := hedge.Config{Trigger: hedge.After(time.Second)}
	reader := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	withSDK, _, err := hedgeotel.NewPolicy(sdk, "users", cfg)
	if err != nil {
		b.Fatal(err)
	}
	nilProvider, _, err := hedgeotel.NewPolicy(nil, "users", cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		p    *hedge.Policy
	}{
		{"plain", hedge.MustNew(cfg)},
		{"nil-provider", nilProvider},
		{"sdk", withSDK},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			fn := func(context.Context) (int, error) { return 1, nil }
			b.ReportAllocs()
			for b.Loop() {
				hedge.Do(ctx, bc.p, fn)
			}
		})
	}
}
