package hedge_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
)

// A success whose Classify panics is never returned: DoDetached's discard must receive it.
func TestClassifyPanicOnSuccessDiscards(t *testing.T) {
	for _, name := range []string{"DoDetached", "DoInlineDetached"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
					Classify: func(err error) hedge.Outcome {
						if err == nil {
							panic("classify")
						}
						return hedge.Classify(err)
					}})
				var discarded []string
				do := hedge.DoDetached[string]
				if name == "DoInlineDetached" {
					do = hedge.DoInlineDetached[string]
				}
				func() {
					defer func() { t.Logf("recovered: %v", recover()) }()
					do(t.Context(), p, func(ctx context.Context) (string, error) { return "body", nil },
						func(v string, err error) { discarded = append(discarded, v) })
				}()
				synctest.Wait()
				if len(discarded) != 1 {
					t.Errorf("discard got %q; want the answer \"body\" that was never returned", discarded)
				}
			})
		})
	}
}
