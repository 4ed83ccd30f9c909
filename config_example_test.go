package hedge_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge"
)

// A trigger's settings travel with it, zero fields meaning their defaults; Off turns off one
// that is on by default. Its text form, what logs and files show, names what differs from the
// defaults.
func ExampleAdaptive() {
	cfg := hedge.Config{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{
		Window:       time.Minute,          // learn the p95 over a minute, not 30s
		BacklogRatio: hedge.Off,            // cancellation reaches the server: hedge into a backlog too
		MinimumDelay: 2 * time.Millisecond, // a fast dependency
	})}
	p := hedge.MustNew(cfg)
	fmt.Println(cfg.Trigger, p.Measured().Warm)
	// Output: quantile 0.95 window=1m0s minimum_delay=2ms backlog_ratio=off false
}

// Validate checks a configuration without building a policy, and names the field and the
// rule a bad one breaks. A setting the trigger would not read is an error too.
func ExampleConfig_Validate() {
	for _, cfg := range []hedge.Config{
		{Trigger: hedge.AtQuantile(0.95)},
		{Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{BacklogRatio: 0.9})},
		{Trigger: hedge.Tied(hedge.Adaptive{BacklogRatio: 1.5})},
		{Trigger: hedge.After(20 * time.Millisecond), Attempts: 1},
	} {
		fmt.Println(cfg.Validate())
	}
	// Output:
	// <nil>
	// hedge: invalid config: Trigger: Adaptive.BacklogRatio must be a finite number > 1 (0 = 1.3, Off = no gate), got 0.9
	// hedge: invalid config: Trigger: Adaptive.MinimumInService, BacklogRatio and WinRate are read by AtQuantile and StartAware, not by Tied
	// hedge: invalid config: Attempts must be >= 2 to hedge (Trigger is after 20ms), got 1
}
