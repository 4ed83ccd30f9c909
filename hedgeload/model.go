package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/sim"
)

// The time scale shrinks every time of the model — service times, the hedge delay, the
// policy's windows and minimum delay — by one factor, so that a run at scale 0.5 is the same
// model played twice as fast. The simulator runs the scaled model too (its figures are, to
// rounding, the unscaled ones times the scale), and every figure is reported divided by the
// scale, in the model's own milliseconds. What does not shrink is this machine's fixed cost
// per call (see Calibration), which is why the scale is a choice and 1 the default.

// scaled is a sim.Distribution whose every draw is the inner one's times s.
type scaled struct {
	d sim.Distribution
	s float64
}

func (d scaled) Sample(r *rand.Rand) time.Duration {
	return time.Duration(float64(d.d.Sample(r)) * d.s)
}
func (d scaled) Mean() time.Duration { return time.Duration(math.Round(float64(d.d.Mean()) * d.s)) }
func (d scaled) String() string      { return fmt.Sprintf("%v, times %g", d.d, d.s) }

// scaleDist returns d with every draw multiplied by s.
func scaleDist(d sim.Distribution, s float64) sim.Distribution {
	if s == 1 {
		return d
	}
	return scaled{d, s}
}

// Documented defaults of hedge.Adaptive, hedge.Config and budget.Config that the
// scale must make explicit.
const (
	defaultWindow       = 30 * time.Second
	defaultMinimumDelay = 10 * time.Millisecond
	defaultBudgetWindow = 10 * time.Second
	defaultMinPerSecond = 1.0
	defaultCooldown     = 5 * time.Second
)

// scaleTrigger returns t with the latency window and the minimum and maximum delays of its
// settings multiplied, through the trigger's text form (the settings' one public reading):
// "quantile 0.95 window=1m" becomes "quantile 0.95 window=6s minimum_delay=1ms" at 0.1. A
// trigger without those settings (After, none) is returned as it is.
func scaleTrigger(t hedge.Trigger, mul func(d, def time.Duration) time.Duration) hedge.Trigger {
	words := strings.Fields(t.String())
	if len(words) == 0 || (words[0] != "quantile" && words[0] != "start-aware" && words[0] != "tied") {
		return t
	}
	set := map[string]time.Duration{}
	var kept []string
	for _, w := range words {
		key, value, ok := strings.Cut(w, "=")
		d, err := time.ParseDuration(value)
		if ok && err == nil && (key == "window" || key == "minimum_delay" || key == "maximum_delay") {
			set[key] = d
			continue
		}
		kept = append(kept, w)
	}
	kept = append(kept, "window="+mul(set["window"], defaultWindow).String(),
		"minimum_delay="+mul(set["minimum_delay"], defaultMinimumDelay).String())
	if m := set["maximum_delay"]; m > 0 {
		kept = append(kept, "maximum_delay="+mul(m, 0).String())
	}
	var scaled hedge.Trigger
	if err := scaled.UnmarshalText([]byte(strings.Join(kept, " "))); err != nil {
		panic("hedgeload: the trigger's own text form does not parse: " + err.Error())
	}
	return scaled
}

// scaleConfig returns c with its times multiplied by s (rates divided by s): the latency
// window, the minimum and maximum delays, the budget's window and reserve, the overload
// cool-down. The adaptive limit has no time to scale that a run at scale ≥ 0.1 would notice.
func scaleConfig(c hedge.Config, s float64) hedge.Config {
	if s == 1 {
		return c
	}
	mul := func(d, def time.Duration) time.Duration {
		if d == 0 {
			d = def
		}
		return time.Duration(float64(d) * s)
	}
	c.Trigger = scaleTrigger(c.Trigger, mul)
	c.OverloadCooldown = mul(c.OverloadCooldown, defaultCooldown)
	if !c.Budget.Off {
		c.Budget.Window = mul(c.Budget.Window, defaultBudgetWindow)
		if c.Budget.MinPerSecond == 0 {
			c.Budget.MinPerSecond = defaultMinPerSecond
		}
		if c.Budget.MinPerSecond != budget.Zero {
			c.Budget.MinPerSecond /= s
		}
	}
	return c
}

// realSetupNames is the simulator's setup names that hedgeload can run against real servers:
// every one (for those with out-of-band load reports, sim.Setup.LoadInterval, its servers
// serve hedgehttp's load stream or ORCA's out-of-band service).
func realSetupNames() []string { return sim.SetupNames() }

// setups returns the simulator's setups named in names, scaled: the same definitions hedgesim
// runs, so both sides run the same policy.
func setups(names []string, hedgeDelay time.Duration, s float64) ([]sim.Setup, error) {
	all := sim.Setups(time.Duration(float64(hedgeDelay) * s))
	var out []sim.Setup
	for _, n := range names {
		found := false
		for _, st := range all {
			if st.Name == n {
				st.Config = scaleConfig(st.Config, s)
				st.LoadInterval = time.Duration(float64(st.LoadInterval) * s)
				out = append(out, st)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown setup %q", n)
		}
	}
	return out, nil
}

// inModel converts a point's times from wire time to the model's time (divides by s).
func inModel(p sim.Point, s float64) sim.Point {
	div := func(x float64) float64 {
		if math.IsInf(x, 0) {
			return x
		}
		return x / s
	}
	p.P50Ms, p.P99Ms, p.P999Ms = div(p.P50Ms), div(p.P99Ms), div(p.P999Ms)
	p.MeanMs, p.MeanWaitMs = div(p.MeanMs), div(p.MeanWaitMs)
	return p
}
