package hedge_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hedgekit/hedge"
)

// Triggers have one text form, for configuration files, flags and logs: the kind, its
// argument, and the settings that are not their default.
func ExampleTrigger_UnmarshalText() {
	for _, text := range []string{"quantile 0.95", "quantile 0.95 backlog_ratio=off window=1m", "after 20ms", "tied tie_delay=2ms", "quantile 1.5"} {
		var t hedge.Trigger
		if err := t.UnmarshalText([]byte(text)); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s -> %v\n", text, t)
	}
	fmt.Println(hedge.AtQuantile(0.9, hedge.Adaptive{MinimumInService: 20 * time.Millisecond}))
	// Output:
	// quantile 0.95 -> quantile 0.95
	// quantile 0.95 backlog_ratio=off window=1m -> quantile 0.95 window=1m0s backlog_ratio=off
	// after 20ms -> after 20ms
	// tied tie_delay=2ms -> tied tie_delay=2ms
	// hedge: invalid config: trigger "quantile 1.5": the quantile must be a number in [0.5, 1), got "1.5"
	// quantile 0.9 minimum_in_service=20ms
}

// Measured encodes to JSON a person can read: durations as durations, reasons by name.
func ExampleMeasured_MarshalJSON() {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond)})
	scripted(p) // one call whose hedge won
	b, _ := json.Marshal(p.MeasuredAt(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)))
	fmt.Println(string(b))
	// Output:
	// {"threshold":"20ms","warm":true,"calls":1,"hedges_started":1,"hedges_won":1,"retries":0,"suppressed":{},"budget":9.1,"error_rate":0,"win_rate_allowance":1}
}

// SlogObserver writes a policy's events to a log/slog logger.
func ExampleSlogObserver() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	p := hedge.MustNew(hedge.Config{
		Trigger:  hedge.After(20 * time.Millisecond),
		Observer: hedge.SlogObserver(logger.With("dependency", "users")),
	})
	scripted(p) // the primary is stuck; the hedge, sent at 20ms, answers 2ms later
	// Output:
	// level=INFO msg=HedgeStarted dependency=users attempt=1 hedge=true delay=20ms
	// level=INFO msg=HedgeWon dependency=users attempt=1 hedge=true duration=2ms
	// level=INFO msg=AttemptDiscarded dependency=users attempt=0 duration=22ms
}
