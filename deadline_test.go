package hedge_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/winrate"
)

// warmAt feeds p n sequential calls of latency d ending by at, so its estimator holds n
// samples of d: every quantile of its attempt latencies is within a bucket (1/16) of d.
func warmAt(t *testing.T, p *hedge.Policy, at time.Time, n int, d time.Duration) {
	t.Helper()
	now := at.Add(-time.Duration(n) * d)
	for range n {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		now = now.Add(d)
		c.AttemptDone(now, 0, hedge.Outcome{})
	}
	if m := p.MeasuredAt(at); !m.Warm {
		t.Fatalf("warm-up: %+v", m)
	}
}

// deadlineAware is the recommended trigger made deadline-aware, hedging on the attempt's
// age alone so that the deadline is the only thing these tests vary, and no sooner than 2ms
// (MinimumDelay) unless a, which is otherwise the trigger's, says otherwise.
func deadlineAware(a hedge.Adaptive) hedge.Config {
	a.UseDeadline = true
	a.MinimumInService = hedge.Off
	if a.MinimumDelay == 0 {
		a.MinimumDelay = 2 * time.Millisecond
	}
	return hedge.Config{Trigger: hedge.AtQuantile(0.95, a)}
}

type hedgeEvents struct {
	started []hedge.Event
	reasons []hedge.Reason
}

func (h *hedgeEvents) observe(e hedge.Event) {
	switch e.Kind {
	case hedge.HedgeStarted:
		h.started = append(h.started, e)
	case hedge.HedgeSuppressed:
		h.reasons = append(h.reasons, e.Reason)
	}
}

// TestDeadlineBringsTheHedgeForward: attempts take 40ms (the p95, and the threshold), and a
// call has 50ms. At its threshold only 10ms would be left, a quarter of what a copy takes;
// deadline-aware, its hedge is sent at 50ms less the p95, when a copy can still answer in
// time, even by a timer that fires late. Without UseDeadline, or without a deadline, the
// hedge waits for the threshold.
func TestDeadlineBringsTheHedgeForward(t *testing.T) {
	var ev hedgeEvents
	cfg := deadlineAware(hedge.Adaptive{})
	cfg.Observer = ev.observe
	p := hedge.MustNew(cfg)
	warmAt(t, p, t0, 20, 40*time.Millisecond)
	s := p.MeasuredAt(t0).Threshold // the live p95 of attempt latencies
	if s < 38*time.Millisecond || s > 43*time.Millisecond {
		t.Fatalf("p95 %v, want about 40ms", s)
	}
	last := ms(50).Add(-s) // the last moment a copy answers in time
	c := p.NewCall(hedge.CallOptions{Deadline: ms(50)})
	runSteps(t, []step{
		{"start: the timer at the last moment", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer " + last.Sub(t0).String()},
		{"the timer fires 2ms late: hedge", func() []hedge.Action { return c.TimerFired(last.Add(2 * time.Millisecond)) }, "start 1 hedge"},
	})
	if len(ev.started) != 1 || ev.started[0].Delay != last.Sub(ms(0)) {
		t.Errorf("HedgeStarted events %+v, want one with Delay %v", ev.started, last.Sub(ms(0)))
	}

	// The deadline never brings a hedge sooner than MinimumDelay, the smallest hedge delay.
	f := hedge.MustNew(deadlineAware(hedge.Adaptive{MinimumDelay: 10 * time.Millisecond}))
	warmAt(t, f, t0, 20, 40*time.Millisecond)
	if got, want := actions(f.NewCall(hedge.CallOptions{Deadline: ms(45)}).Start(ms(0))), "start 0, timer 10ms"; got != want {
		t.Errorf("45ms to go: actions %q, want %q (MinimumDelay)", got, want)
	}

	for _, tc := range []struct {
		name string
		cfg  hedge.Config
		opts hedge.CallOptions
	}{
		{"without UseDeadline", hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumInService: hedge.Off, MinimumDelay: 2 * time.Millisecond})}, hedge.CallOptions{Deadline: ms(50)}},
		{"without a deadline", deadlineAware(hedge.Adaptive{}), hedge.CallOptions{}},
	} {
		q := hedge.MustNew(tc.cfg)
		warmAt(t, q, t0, 20, 40*time.Millisecond)
		c := q.NewCall(tc.opts)
		if got, want := actions(c.Start(ms(0))), "start 0, timer "+s.String(); got != want {
			t.Errorf("%s: actions %q, want %q (the threshold)", tc.name, got, want)
		}
	}
}

// TestNoTimeLeftIsNeverHedged: attempts take 40ms, the threshold is held to 20ms
// (MaximumDelay), and a call has 30ms. When its hedge falls due, 10ms are left: no copy
// answers that fast, so none is sent, and the refusal is reported with ReasonNoTimeLeft, in
// its event and in Measured. The same call with 80ms left is hedged at its threshold.
func TestNoTimeLeftIsNeverHedged(t *testing.T) {
	var ev hedgeEvents
	cfg := deadlineAware(hedge.Adaptive{MaximumDelay: 20 * time.Millisecond})
	cfg.Observer = ev.observe
	p := hedge.MustNew(cfg)
	warmAt(t, p, t0, 20, 40*time.Millisecond)
	ev.reasons = nil // the warm-up's cold suppressions
	c := p.NewCall(hedge.CallOptions{Deadline: ms(30)})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer 20ms"},
		{"due with 10ms left: no hedge", func() []hedge.Action { return c.TimerFired(ms(20)) }, ""},
		{"the caller gives up", func() []hedge.Action { return c.Cancel(ms(30), context.DeadlineExceeded) }, "cancel 0, finish -1"},
	})
	if len(ev.started) != 0 || len(ev.reasons) != 1 || ev.reasons[0] != hedge.ReasonNoTimeLeft {
		t.Errorf("hedges %d, suppressions %v; want none started and one %v", len(ev.started), ev.reasons, hedge.ReasonNoTimeLeft)
	}
	if m := p.MeasuredAt(ms(30)); m.Suppressed[hedge.ReasonNoTimeLeft] != 1 || m.HedgesStarted != 0 {
		t.Errorf("Measured: %d hedges, suppressed %v; want one %v", m.HedgesStarted, m.Suppressed, hedge.ReasonNoTimeLeft)
	}
	if got := hedge.ReasonNoTimeLeft.String(); got != "no_time_left" {
		t.Errorf("ReasonNoTimeLeft is %q", got)
	}

	ok := p.NewCall(hedge.CallOptions{Deadline: ms(80)})
	runSteps(t, []step{
		{"start, 80ms left", func() []hedge.Action { return ok.Start(ms(0)) }, "start 0, timer 20ms"},
		{"due with 60ms left: hedge", func() []hedge.Action { return ok.TimerFired(ms(20)) }, "start 1 hedge"},
	})
}

// TestDeadlineKeepsTheGates: the hedge the deadline brings forward still passes every gate:
// a sheddable call under NeverHedgeSheddable is not hedged at its last moment, and says why.
func TestDeadlineKeepsTheGates(t *testing.T) {
	var ev hedgeEvents
	cfg := deadlineAware(hedge.Adaptive{})
	cfg.NeverHedgeSheddable, cfg.Observer = true, ev.observe
	p := hedge.MustNew(cfg)
	warmAt(t, p, t0, 20, 40*time.Millisecond)
	ev.reasons = nil
	last := ms(50).Add(-p.MeasuredAt(t0).Threshold)
	c := p.NewCall(hedge.CallOptions{Deadline: ms(50), Criticality: hedge.Sheddable})
	runSteps(t, []step{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer " + last.Sub(t0).String()},
		{"the last moment: the gate refuses", func() []hedge.Action { return c.TimerFired(last) }, ""},
	})
	if len(ev.reasons) != 1 || ev.reasons[0] != hedge.ReasonSheddable {
		t.Errorf("suppressions %v, want [sheddable]", ev.reasons)
	}
}

// TestDoHedgesByTheContextDeadline: Do reads the caller's deadline from its context. With
// attempts taking 40ms and 50ms to go, the hedge starts at 50ms less the p95 and answers well
// before the deadline; with 30ms to go and the threshold held to 20ms, no hedge is sent and
// the call ends with the context's error when its straggler outlives the deadline.
func TestDoHedgesByTheContextDeadline(t *testing.T) {
	attempt := func(primary time.Duration) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			d := primary
			if info, _ := hedge.AttemptFrom(ctx); info.Hedge {
				d = time.Millisecond
			}
			select {
			case <-time.After(d):
				return "ok", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
	}
	warmDo := func(t *testing.T, p *hedge.Policy) {
		for range 20 {
			if _, err := hedge.Do(t.Context(), p, attempt(40*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	synctest.Test(t, func(t *testing.T) {
		var lg hedge.Log
		p := hedge.MustNew(deadlineAware(hedge.Adaptive{}))
		warmDo(t, p)
		s := p.Measured().Threshold
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		if v, err := hedge.Do(hedge.WithLog(ctx, &lg), p, attempt(time.Second)); err != nil || v != "ok" {
			t.Fatalf("Do = %q, %v", v, err)
		}
		if got, want := time.Since(start), 50*time.Millisecond-s+time.Millisecond; got != want {
			t.Errorf("answered after %v, want %v (the hedge at 50ms less the p95 %v, + 1ms); log %v", got, want, s, lg.String())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(deadlineAware(hedge.Adaptive{MaximumDelay: 20 * time.Millisecond}))
		warmDo(t, p)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		if _, err := hedge.Do(ctx, p, attempt(time.Second)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do: %v, want the deadline", err)
		}
		if m := p.Measured(); m.HedgesStarted != 0 || m.Suppressed[hedge.ReasonNoTimeLeft] != 1 {
			t.Errorf("Measured: %d hedges, suppressed %v; want none, one %v", m.HedgesStarted, m.Suppressed, hedge.ReasonNoTimeLeft)
		}
	})
}

// TestUseDeadlineIsAdaptivesOnly: Tied runs none of AtQuantile's gates and does not read the
// deadline: the setting is an error there, not silently ignored.
func TestUseDeadlineIsAdaptivesOnly(t *testing.T) {
	err := hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{UseDeadline: true})}.Validate()
	if !errors.Is(err, hedge.ErrInvalidConfig) {
		t.Errorf("Tied with UseDeadline: %v, want ErrInvalidConfig", err)
	}
	for _, text := range []string{"quantile 0.95 use_deadline=on", "start-aware 0.9 use_deadline=on"} {
		var tr hedge.Trigger
		if err := tr.UnmarshalText([]byte(text)); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if tr.String() != text {
			t.Errorf("%q reads back as %q", text, tr.String())
		}
	}
	var tr hedge.Trigger
	if err := tr.UnmarshalText([]byte("quantile 0.95 use_deadline=maybe")); !errors.Is(err, hedge.ErrInvalidConfig) {
		t.Errorf("use_deadline=maybe: %v, want ErrInvalidConfig", err)
	}
}

// TestTooLateIsNeverHedged: without UseDeadline, a hedge whose call's deadline leaves a copy
// less than the median attempt latency is refused (ReasonNoTimeLeft) while the win-rate loop
// has not found hedges winning: more likely than not, the copy would answer after the caller
// stopped waiting, and it would only add load where calls already run into their deadlines.
// Attempts take 10ms but for one in ten, which take 40ms (the p95, and the threshold). A call
// with 45ms has 5ms left when its hedge falls due, half the median: no hedge. With 60ms (20ms
// left), with no deadline, or without the loop (WinRate.Floor Off), the hedge is sent.
func TestTooLateIsNeverHedged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Time
		floor    float64 // Adaptive.WinRate.Floor
		want     string
	}{
		{"5ms left", ms(45), 0, ""},
		{"20ms left", ms(60), 0, "start 1 hedge"},
		{"no deadline", time.Time{}, 0, "start 1 hedge"},
		{"5ms left, no win-rate loop", ms(45), hedge.Off, "start 1 hedge"},
	} {
		var ev hedgeEvents
		a := hedge.Adaptive{MinimumInService: hedge.Off, WinRate: winrate.Config{Floor: tc.floor}}
		p := hedge.MustNew(hedge.Config{
			Trigger:  hedge.AtQuantile(0.95, a),
			Observer: ev.observe,
		})
		now := t0.Add(-time.Second)
		for i := range 20 {
			d := 10 * time.Millisecond
			if i%10 == 9 {
				d = 40 * time.Millisecond
			}
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			now = now.Add(d)
			c.AttemptDone(now, 0, hedge.Outcome{})
		}
		if m := p.MeasuredAt(t0); !m.Warm || m.Threshold < 38*time.Millisecond || m.Threshold > 43*time.Millisecond {
			t.Fatalf("warm-up: %+v, want a threshold of about 40ms", m)
		}
		th := p.MeasuredAt(t0).Threshold
		ev.reasons = nil // the warm-up's cold suppressions
		c := p.NewCall(hedge.CallOptions{Deadline: tc.deadline})
		if got, want := actions(c.Start(ms(0))), "start 0, timer "+th.String(); got != want {
			t.Fatalf("%s: start: actions %q, want %q", tc.name, got, want)
		}
		if got := actions(c.TimerFired(ms(0).Add(th))); got != tc.want {
			t.Errorf("%s: at the threshold: actions %q, want %q", tc.name, got, tc.want)
		}
		refused := len(ev.reasons) == 1 && ev.reasons[0] == hedge.ReasonNoTimeLeft
		if tc.want == "" && (!refused || len(ev.started) != 0) {
			t.Errorf("%s: suppressions %v, hedges %d; want one no_time_left and none", tc.name, ev.reasons, len(ev.started))
		}
		if tc.want != "" && (len(ev.reasons) != 0 || len(ev.started) != 1) {
			t.Errorf("%s: suppressions %v, hedges %d; want none and one", tc.name, ev.reasons, len(ev.started))
		}
		if got := p.MeasuredAt(ms(0).Add(th)).Suppressed[hedge.ReasonNoTimeLeft]; got != map[bool]int64{true: 1}[tc.want == ""] {
			t.Errorf("%s: Measured no_time_left %d", tc.name, got)
		}
	}
}

// TestLateCopiesNeedTheFloorsChance: while the win-rate loop finds hedges winning, a copy
// whose deadline leaves it less than the median attempt latency is still sent, but not one
// left less than the loop's Floor-quantile of attempt latencies: fewer than Floor of the
// copies would answer in time, less than the loop asks of any hedge.
func TestLateCopiesNeedTheFloorsChance(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Budget: noBudget, Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{
		MinimumSamples: 1, MinimumDelay: 20 * time.Millisecond, MaximumDelay: 20 * time.Millisecond,
		MinimumInService: hedge.Off, BacklogRatio: hedge.Off,
		WinRate: winrate.Config{Floor: 0.3, Window: 4 * time.Second}})})
	// Two seconds of slow calls, each rescued by its hedge 1-10 ms after it was sent: the
	// latencies learnt are the hedges' 1-10 ms and the losers' 21-30 ms, so the 0.3-quantile
	// is about 6 ms and the median about 10 ms.
	now := t0
	for i := range 200 {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(now)
		winner := 1
		if !has(c.TimerFired(now.Add(20*time.Millisecond)), hedge.StartAttempt) {
			if i > 0 {
				t.Fatalf("call %d: no hedge at the threshold", i)
			}
			winner = 0 // the first finds the policy cold
		}
		c.AttemptDone(now.Add(20*time.Millisecond+time.Duration(1+i%10)*time.Millisecond), winner, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		left time.Duration // what the deadline leaves a copy at the threshold
		want bool          // a hedge starts
	}{
		{15 * time.Millisecond, true}, // more than the median
		{8 * time.Millisecond, true},  // less than the median, more than the 0.3-quantile: the loop finds hedges winning
		{3 * time.Millisecond, false}, // less than the 0.3-quantile
	} {
		before := p.MeasuredAt(now).Suppressed[hedge.ReasonNoTimeLeft]
		c := p.NewCall(hedge.CallOptions{Deadline: now.Add(20*time.Millisecond + tc.left)})
		c.Start(now)
		got := has(c.TimerFired(now.Add(20*time.Millisecond)), hedge.StartAttempt)
		refused := p.MeasuredAt(now).Suppressed[hedge.ReasonNoTimeLeft] - before
		if got != tc.want || refused != map[bool]int64{false: 1}[tc.want] {
			t.Errorf("%v left: hedge started %v, no_time_left %d; want started %v", tc.left, got, refused, tc.want)
		}
		c.AttemptDone(now.Add(20*time.Millisecond+tc.left/2), 0, hedge.Outcome{})
		now = now.Add(10 * time.Millisecond)
	}
}
