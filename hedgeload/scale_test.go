package main

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// Scaling a run scales the trigger's own times, defaults made explicit, and keeps its other
// settings.
func TestScaleConfigScalesTheTriggersSettings(t *testing.T) {
	for _, c := range []struct {
		in, want hedge.Trigger
	}{
		{hedge.AtQuantile(0.95), hedge.AtQuantile(0.95, hedge.Adaptive{Window: 3 * time.Second, MinimumDelay: time.Millisecond})},
		{hedge.StartAware(0.9, hedge.Adaptive{Window: time.Minute, MaximumDelay: time.Second, BacklogRatio: hedge.Off}),
			hedge.StartAware(0.9, hedge.Adaptive{Window: 6 * time.Second, MinimumDelay: time.Millisecond, MaximumDelay: 100 * time.Millisecond, BacklogRatio: hedge.Off})},
		{hedge.Tied(hedge.Adaptive{TieDelay: 2 * time.Millisecond}), hedge.Tied(hedge.Adaptive{TieDelay: 2 * time.Millisecond, Window: 3 * time.Second, MinimumDelay: time.Millisecond})},
		{hedge.After(20 * time.Millisecond), hedge.After(20 * time.Millisecond)},
	} {
		got := scaleConfig(hedge.Config{Trigger: c.in}, 0.1).Trigger
		if got != c.want {
			t.Errorf("scaleConfig(%v, 0.1) trigger = %v, want %v", c.in, got, c.want)
		}
	}
}
