package hedge_test

import (
	"context"
	"sync/atomic"
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

// A panic in discard is contained: on an attempt's goroutine after the call (a late loser's
// answer) it is dropped, and the process goes on; on the driver, while the call runs, the
// caller gets a *PanicError once the call is over, not the raw panic from the middle of it.
func TestDiscardPanicContained(t *testing.T) {
	for _, name := range []string{"DoDetached", "DoInlineDetached"} {
		t.Run(name, func(t *testing.T) {
			do := hedge.DoDetached[string]
			if name == "DoInlineDetached" {
				do = hedge.DoInlineDetached[string]
			}
			synctest.Test(t, func(t *testing.T) {
				p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Millisecond), Budget: noBudget})
				var discarded atomic.Int32
				v, hold, err := do(t.Context(), p, func(ctx context.Context) (string, error) {
					if info, _ := hedge.AttemptFrom(ctx); !info.Hedge {
						time.Sleep(20 * time.Millisecond) // answers after the hedge has won
						return "late", nil
					}
					return "hedge", nil
				}, func(string, error) { discarded.Add(1); panic("discard") })
				hold.Release()
				if err != nil || v != "hedge" {
					t.Fatalf("%q, %v; want the hedge's answer", v, err)
				}
				time.Sleep(30 * time.Millisecond) // the late answer reaches discard, which panics on its goroutine
				synctest.Wait()
				if discarded.Load() != 1 {
					t.Fatalf("discard called %d times, want 1", discarded.Load())
				}

				q := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget,
					Classify: func(err error) hedge.Outcome {
						if err == nil {
							panic("classify")
						}
						return hedge.Classify(err)
					}})
				func() {
					defer func() {
						pe, ok := recover().(*hedge.PanicError)
						if !ok || pe.Where != "Classify" {
							t.Errorf("recovered %v, want Classify's *PanicError", pe)
						}
					}()
					do(t.Context(), q, func(context.Context) (string, error) { return "body", nil },
						func(string, error) { panic("discard") })
				}()
			})
		})
	}
}
