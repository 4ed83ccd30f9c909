package hedge_test

import (
	"context"
	"testing"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

// TestDriversAgree plays the agreement scenarios (hedgetest.Scenarios) through Do and
// DoInline and checks what an attempt sees and what reaches the caller. The HTTP and gRPC
// integrations and the simulator run the same scenarios in their own modules' tests.
func TestDriversAgree(t *testing.T) {
	for _, d := range []struct {
		name string
		do   func(context.Context, *hedge.Policy, func(context.Context) (string, error)) (string, error)
	}{
		{"Do", hedge.Do[string]},
		{"DoInline", hedge.DoInline[string]},
	} {
		t.Run(d.name, func(t *testing.T) {
			hedgetest.TestDriver(t, func(t *testing.T, cfg hedge.Config, hook func(context.Context)) hedgetest.CallFunc {
				p := hedge.MustNew(cfg)
				return func(ctx context.Context, answers []hedgetest.Answer[string]) (string, error) {
					script := hedgetest.Script(answers...)
					if hook == nil {
						return d.do(ctx, p, script)
					}
					return d.do(ctx, p, func(ctx context.Context) (string, error) {
						hook(ctx)
						return script(ctx)
					})
				}
			})
		})
	}
}
