package hedge_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// warmWith runs n calls of p that each take d, on the state machine at virtual times from t0.
func warmWith(p *hedge.Policy, n int, d time.Duration) {
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		c := p.NewCall(hedge.CallOptions{})
		c.Start(at)
		c.AttemptDone(at.Add(d), 0, hedge.Outcome{Class: hedge.Success})
	}
}

// A per-call trigger replaces the policy's threshold for that call only.
func TestCallOptionsTrigger(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: noBudget})
	warmWith(p, 40, 30*time.Millisecond)
	now := t0.Add(time.Second)
	m := p.MeasuredAt(now)
	if !m.Warm || m.Threshold < 25*time.Millisecond {
		t.Fatalf("policy threshold %v (warm %v), want about 30ms", m.Threshold, m.Warm)
	}
	none, after, q := hedge.Trigger{}, hedge.After(3*time.Millisecond), hedge.AtQuantile(0.5)
	for _, tc := range []struct {
		name string
		t    *hedge.Trigger
		want string
	}{
		{"policy's own", nil, "start 0, timer " + (time.Second + m.Threshold).String()},
		{"none", &none, "start 0"},
		{"after 3ms", &after, "start 0, timer 1.003s"},
	} {
		c := p.NewCall(hedge.CallOptions{Trigger: tc.t})
		if got := actions(c.Start(now)); got != tc.want {
			t.Errorf("%s: Start = %q, want %q", tc.name, got, tc.want)
		}
	}
	// The median of 30ms latencies is a little under the 0.95 quantile.
	as := p.NewCall(hedge.CallOptions{Trigger: &q}).Start(now)
	if len(as) != 2 || as[1].Kind != hedge.ArmTimer || as[1].At.Sub(now) < 25*time.Millisecond || as[1].At.Sub(now) >= m.Threshold {
		t.Errorf("quantile 0.5: %q, want a timer in [25ms, %v)", actions(as), m.Threshold)
	}
	// The policy's own calls are unchanged by the overrides.
	if got := p.MeasuredAt(now).Threshold; got != m.Threshold {
		t.Errorf("threshold moved to %v", got)
	}
}

// A quantile override on a policy that learns nothing does not hedge; an After override
// hedges a policy whose own trigger is none.
func TestCallOptionsTriggerWithoutEstimator(t *testing.T) {
	// Attempts still bounds the call: a policy without a trigger sends one attempt unless
	// told otherwise.
	p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget})
	q, after := hedge.AtQuantile(0.9), hedge.After(5*time.Millisecond)
	if got := actions(p.NewCall(hedge.CallOptions{Trigger: &q}).Start(t0)); got != "start 0" {
		t.Errorf("quantile on none: %q, want no timer", got)
	}
	c := p.NewCall(hedge.CallOptions{Trigger: &after})
	c.Start(t0)
	if got := actions(c.TimerFired(ms(5))); got != "start 1 hedge" {
		t.Errorf("after on none: %q, want a hedge at 5ms", got)
	}
}

// WithTrigger reaches Do's calls through the context.
func TestWithTriggerDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(50 * time.Millisecond), Budget: noBudget})
		slow := func(ctx context.Context) (int, error) {
			info, _ := hedge.AttemptFrom(ctx)
			if info.Index == 0 {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
				}
				return 0, ctx.Err()
			}
			return 1, nil
		}
		var log hedge.Log
		start := time.Now()
		ctx := hedge.WithLog(hedge.WithTrigger(t.Context(), hedge.After(5*time.Millisecond)), &log)
		if v, err := hedge.Do(ctx, p, slow); v != 1 || err != nil || time.Since(start) != 5*time.Millisecond {
			t.Errorf("after 5ms: %v, %v after %v; want the hedge's answer at 5ms", v, err, time.Since(start))
		}
		start = time.Now()
		if v, err := hedge.Do(hedge.WithTrigger(t.Context(), hedge.Trigger{}), p, slow); v != 0 || err != nil || time.Since(start) != 100*time.Millisecond {
			t.Errorf("none: %v, %v after %v; want the primary's answer at 100ms", v, err, time.Since(start))
		}
		if tr, ok := hedge.TriggerFrom(ctx); !ok || tr != hedge.After(5*time.Millisecond) {
			t.Errorf("TriggerFrom = %v, %v", tr, ok)
		}
	})
}

func TestWithTriggerRejectsEvidenceTriggers(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("WithTrigger(Tied()) did not panic")
		}
	}()
	hedge.WithTrigger(context.Background(), hedge.Tied())
}

// NewFrom keeps the learnt threshold when the estimator's settings stay, and starts cold
// when they change.
func TestNewFromCarriesThreshold(t *testing.T) {
	cfg := hedge.Config{Trigger: hedge.AtQuantile(0.95), Budget: budget.Config{Ratio: 0.1}}
	old := hedge.MustNew(cfg)
	warmWith(old, 40, 30*time.Millisecond)
	now := t0.Add(time.Second)
	want := old.MeasuredAt(now)
	cfg.Budget.Ratio = 0.2
	p, err := hedge.NewFrom(old, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.MeasuredAt(now); !got.Warm || got.Threshold != want.Threshold {
		t.Errorf("after a budget change: threshold %v warm %v, want %v warm", got.Threshold, got.Warm, want.Threshold)
	}
	cfg.Trigger = hedge.AtQuantile(0.99)
	if p, err = hedge.NewFrom(old, cfg); err != nil {
		t.Fatal(err)
	}
	if got := p.MeasuredAt(now); got.Warm {
		t.Errorf("another quantile: warm at %v, want a cold estimator", got.Threshold)
	}
	if _, err := hedge.NewFrom(old, hedge.Config{Attempts: -1}); err == nil {
		t.Error("NewFrom accepted an invalid configuration")
	}
}
