package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
)

// BenchmarkRefused is a call an open breaker refuses before any attempt, through each driver:
// during an outage every call is, and refusing should cost next to nothing.
func BenchmarkRefused(b *testing.B) {
	for _, d := range []struct {
		name string
		do   func(context.Context, *hedge.Policy, func(context.Context) (int, error)) (int, error)
	}{
		{"Do", hedge.Do[int]},
		{"DoInline", hedge.DoInline[int]},
	} {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			p := mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay), Breaker: &breaker.Config{ConsecutiveFailures: 1, OpenFor: time.Hour}})
			down := func(context.Context) (int, error) { return 0, errors.New("down") }
			d.do(ctx, p, down) // opens the breaker
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.do(ctx, p, answer); !errors.Is(err, hedge.ErrBreakerOpen) {
					b.Fatalf("err = %v, want ErrBreakerOpen", err)
				}
			}
		})
	}
}
