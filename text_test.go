package hedge_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/winrate"
)

func TestTriggerTextRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		trigger hedge.Trigger
		text    string
	}{
		{hedge.AtQuantile(0.95), "quantile 0.95"},
		{hedge.AtQuantile(0.5), "quantile 0.5"},
		{hedge.AtQuantile(0.999), "quantile 0.999"},
		{hedge.After(20 * time.Millisecond), "after 20ms"},
		{hedge.After(1500 * time.Microsecond), "after 1.5ms"},
		{hedge.After(0), "after 0s"},
		{hedge.Tied(), "tied"},
		{hedge.StartAware(0.95), "start-aware 0.95"},
		{hedge.Trigger{}, "none"},
		{hedge.AtQuantile(0.9, hedge.Adaptive{Window: time.Minute, MinimumSamples: 50, MinimumDelay: 5 * time.Millisecond,
			MaximumDelay: time.Second, MinimumInService: hedge.Off, BacklogRatio: 1.5,
			WinRate: winrate.Config{Floor: hedge.Off, Window: 2 * time.Minute, MinimumSamples: 5, MinimumAllowance: 0.1}}),
			"quantile 0.9 window=1m0s minimum_samples=50 minimum_delay=5ms maximum_delay=1s minimum_in_service=off " +
				"backlog_ratio=1.5 win_rate.floor=off win_rate.window=2m0s win_rate.minimum_samples=5 win_rate.minimum_allowance=0.1"},
		{hedge.StartAware(0.95, hedge.Adaptive{BacklogRatio: hedge.Off}), "start-aware 0.95 backlog_ratio=off"},
		{hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off, MinimumDelay: time.Hour}), "tied minimum_delay=1h0m0s tie_delay=off"},
		{hedge.Tied(hedge.Adaptive{TieDelay: 2 * time.Millisecond, Window: time.Minute, MinimumSamples: 7, MaximumDelay: time.Second}),
			"tied window=1m0s minimum_samples=7 maximum_delay=1s tie_delay=2ms"},
	} {
		b, err := tc.trigger.MarshalText()
		if err != nil || string(b) != tc.text {
			t.Errorf("%v.MarshalText() = %q, %v; want %q", tc.trigger, b, err, tc.text)
		}
		if s := tc.trigger.String(); s != tc.text {
			t.Errorf("String() = %q, want the text form %q", s, tc.text)
		}
		var got hedge.Trigger
		if err := got.UnmarshalText([]byte(tc.text)); err != nil || got != tc.trigger {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tc.text, got, err, tc.trigger)
		}
	}
}

func TestTriggerUnmarshalTextLenient(t *testing.T) {
	for text, want := range map[string]hedge.Trigger{
		"":                  {},
		"  Quantile\t0.9  ": hedge.AtQuantile(0.9),
		"AFTER 1m":          hedge.After(time.Minute),
		"Tied":              hedge.Tied(),
		"Start-Aware 0.99":  hedge.StartAware(0.99),
		"after 250us":       hedge.After(250 * time.Microsecond),
		"quantile 9.5e-1":   hedge.AtQuantile(0.95),
		"quantile 0.9 BACKLOG_RATIO=OFF window=30s": hedge.AtQuantile(0.9, hedge.Adaptive{BacklogRatio: hedge.Off, Window: 30 * time.Second}),
		"tied  tie_delay=3ms":                       hedge.Tied(hedge.Adaptive{TieDelay: 3 * time.Millisecond}),
		"none":                                      {},
		"after 1h2m3s4ms5us6":                       {}, // not valid: checked below
	} {
		var got hedge.Trigger
		err := got.UnmarshalText([]byte(text))
		if text == "after 1h2m3s4ms5us6" {
			if err == nil {
				t.Errorf("UnmarshalText(%q) = %v, want an error", text, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
}

func TestTriggerUnmarshalTextErrors(t *testing.T) {
	for _, text := range []string{
		"quantile 1.5", "quantile 1", "quantile 0.4", "quantile NaN", "quantile", "quantile 0.9 0.8",
		"start-aware 1.5", "start-aware", "after", "after -1ms", "after 20", "after soon", "tied 2", "none 0", "percentile 0.95",
		"20ms", "0.95",
		"quantile window=1m", "quantile 0.9 window", "quantile 0.9 delay=1ms", "quantile 0.9 window=1m window=2m",
		"quantile 0.9 window=soon", "quantile 0.9 minimum_samples=1.5", "quantile 0.9 backlog_ratio=NaN",
		"tied backlog_ratio=2", "after 20ms delay=1ms", "quantile 0.9 tie_delay=1ms",
	} {
		var got hedge.Trigger
		err := got.UnmarshalText([]byte(text))
		if !errors.Is(err, hedge.ErrInvalidConfig) {
			t.Errorf("UnmarshalText(%q) = %v, %v; want an error wrapping ErrInvalidConfig", text, got, err)
		}
	}
	var got hedge.Trigger
	err := got.UnmarshalText([]byte("quantile 1.5"))
	if err == nil || !strings.Contains(err.Error(), "[0.5, 1)") {
		t.Errorf("quantile 1.5: %v; want the rule in the message", err)
	}
}

func TestTriggerJSON(t *testing.T) {
	type doc struct{ Trigger hedge.Trigger }
	b, err := json.Marshal(doc{hedge.After(20 * time.Millisecond)})
	if err != nil || string(b) != `{"Trigger":"after 20ms"}` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"Trigger":"quantile 0.95"}`), &d); err != nil || d.Trigger != hedge.AtQuantile(0.95) {
		t.Fatalf("json.Unmarshal = %v, %v", d.Trigger, err)
	}
}

func TestReasonText(t *testing.T) {
	all := append([]hedge.Reason{hedge.ReasonNone}, hedge.Reasons()...)
	seen := map[string]bool{}
	for _, r := range all {
		b, err := r.MarshalText()
		if err != nil || string(b) != r.String() {
			t.Errorf("%v.MarshalText() = %q, %v", r, b, err)
		}
		if seen[string(b)] {
			t.Errorf("two reasons are named %q", b)
		}
		seen[string(b)] = true
		var got hedge.Reason
		if err := got.UnmarshalText([]byte(strings.ToUpper(string(b)))); err != nil || got != r {
			t.Errorf("UnmarshalText(%q) = %v, %v", strings.ToUpper(string(b)), got, err)
		}
	}
	var r hedge.Reason
	if err := r.UnmarshalText([]byte("bad luck")); err == nil {
		t.Error("UnmarshalText(bad luck) succeeded")
	}
	if _, err := hedge.Reason(200).MarshalText(); err == nil {
		t.Error("Reason(200).MarshalText() succeeded")
	}
}

func TestEventKindText(t *testing.T) {
	kinds := []hedge.EventKind{hedge.AttemptStarted, hedge.AttemptFinished, hedge.HedgeStarted, hedge.HedgeWon,
		hedge.AttemptDiscarded, hedge.HedgeSuppressed, hedge.RetryScheduled, hedge.CallFinished,
		hedge.LimitChanged, hedge.BreakerChanged}
	for _, k := range kinds {
		b, err := k.MarshalText()
		if err != nil || string(b) != k.String() {
			t.Errorf("%v.MarshalText() = %q, %v", k, b, err)
		}
		var got hedge.EventKind
		if err := got.UnmarshalText(b); err != nil || got != k {
			t.Errorf("UnmarshalText(%q) = %v, %v", b, got, err)
		}
	}
	var k hedge.EventKind
	if err := k.UnmarshalText([]byte("HedgeLost")); err == nil {
		t.Error("UnmarshalText(HedgeLost) succeeded")
	}
	if _, err := hedge.EventKind(0).MarshalText(); err == nil {
		t.Error("EventKind(0).MarshalText() succeeded")
	}
}

func TestMeasuredJSON(t *testing.T) {
	// An unlimited budget is +Inf, which encoding/json cannot write: it must come out as null.
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: budget.Config{Off: true}})
	b, err := json.Marshal(p.MeasuredAt(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"threshold":"20ms","warm":true,"calls":0,"hedges_started":0,"hedges_won":0,"retries":0,"suppressed":{},"budget":null,"error_rate":0,"win_rate_allowance":1}`
	if string(b) != want {
		t.Errorf("json.Marshal(Measured) =\n%s\nwant\n%s", b, want)
	}
	m := hedge.Measured{Suppressed: map[hedge.Reason]int64{hedge.ReasonWinRate: 2}, Budget: math.NaN(),
		Breaker: "open", Limit: 20, InFlight: 3, OverloadUntil: time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"suppressed":{"win_rate":2}`, `"budget":null`, `"breaker":"open"`, `"limit":20`, `"in_flight":3`, `"overload_until":"2026-01-01T00:00:05Z"`} {
		if !strings.Contains(string(b), part) {
			t.Errorf("json.Marshal(Measured) = %s, missing %s", b, part)
		}
	}
	if strings.Contains(string(b), "threshold") {
		t.Errorf("a cold policy's JSON has a threshold: %s", b)
	}
}

// scripted runs one call on explicit time: the primary is stuck, the hedge fires at 20ms
// and answers 2ms later.
func scripted(p *hedge.Policy) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(now)
	c.TimerFired(now.Add(20 * time.Millisecond))
	c.AttemptDone(now.Add(22*time.Millisecond), 1, hedge.Outcome{Class: hedge.Success})
}

func TestSlogObserverLevelsAndAttrs(t *testing.T) {
	var out strings.Builder
	h := slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: dropTime})
	scripted(hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Observer: hedge.SlogObserver(slog.New(h))}))
	want := "level=INFO msg=HedgeStarted attempt=1 hedge=true delay=20ms\n" +
		"level=INFO msg=HedgeWon attempt=1 hedge=true duration=2ms\n" +
		"level=INFO msg=AttemptDiscarded attempt=0 duration=22ms\n"
	if out.String() != want {
		t.Errorf("Info log:\n%s\nwant\n%s", out.String(), want)
	}

	// A suppressed hedge names its reason; a failed call is a warning.
	out.Reset()
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: budget.Config{Ratio: budget.Zero, MinPerSecond: budget.Zero},
		Observer: hedge.SlogObserver(slog.New(h))})
	now := time.Unix(0, 0)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(now)
	c.TimerFired(now.Add(20 * time.Millisecond))
	c.AttemptDone(now.Add(30*time.Millisecond), 0, hedge.Outcome{Class: hedge.Permanent, Err: errors.New("no such user")})
	want = "level=INFO msg=HedgeSuppressed attempt=1 delay=20ms reason=budget\n" +
		"level=INFO msg=AttemptFinished attempt=0 duration=30ms err=\"no such user\"\n" +
		"level=WARN msg=CallFinished attempt=-1 duration=30ms err=" // the call's error, as Do returns it
	if got := out.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "no such user\"\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("log:\n%s\nwant\n%s…no such user\"", got, want)
	}

	// Limit events carry the limit only.
	if got := slog.AnyValue(hedge.Event{Kind: hedge.LimitChanged, Limit: 21}).Resolve().String(); got != "[kind=LimitChanged limit=21]" {
		t.Errorf("LogValue = %s", got)
	}
}

func TestSlogObserverDisabledAllocatesNothing(t *testing.T) {
	obs := hedge.SlogObserver(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	e := hedge.Event{Kind: hedge.HedgeStarted, Attempt: 1, Hedge: true, Delay: time.Millisecond}
	if n := testing.AllocsPerRun(100, func() { obs(e) }); n != 0 {
		t.Errorf("a disabled level allocates %v per event", n)
	}
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

// FuzzTriggerText: any text either is refused with an error wrapping ErrInvalidConfig, or
// parses to a trigger whose text form parses back to the same trigger (one text form).
func FuzzTriggerText(f *testing.F) {
	for _, s := range []string{"quantile 0.95", "start-aware 0.9 backlog_ratio=off window=1m", "tied tie_delay=2ms minimum_samples=3",
		"after 20ms", "none", "", "quantile 0.9 win_rate.floor=0.2 win_rate.minimum_allowance=0.1", "tied tie_delay=-1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var tr hedge.Trigger
		if err := tr.UnmarshalText([]byte(s)); err != nil {
			if !errors.Is(err, hedge.ErrInvalidConfig) {
				t.Fatalf("UnmarshalText(%q) = %v, not wrapping ErrInvalidConfig", s, err)
			}
			return
		}
		b, err := tr.MarshalText()
		if err != nil || string(b) != tr.String() {
			t.Fatalf("MarshalText(%v) = %q, %v; String() = %q", tr, b, err, tr.String())
		}
		var back hedge.Trigger
		if err := back.UnmarshalText(b); err != nil || back != tr {
			t.Fatalf("%q parsed to %v, whose text %q parses to %v, %v", s, tr, b, back, err)
		}
	})
}
