package hedge

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Text forms. Configuration files, logs and dashboards name triggers, reasons and event kinds
// in words, so each has a text form that round-trips through encoding.TextMarshaler and
// encoding.TextUnmarshaler (and therefore through encoding/json, as values and map keys).

var (
	_ encoding.TextMarshaler   = Trigger{}
	_ encoding.TextUnmarshaler = (*Trigger)(nil)
	_ encoding.TextMarshaler   = Reason(0)
	_ encoding.TextUnmarshaler = (*Reason)(nil)
	_ encoding.TextMarshaler   = EventKind(0)
	_ encoding.TextUnmarshaler = (*EventKind)(nil)
	_ json.Marshaler           = Measured{}
)

// MarshalText returns the trigger's text form, which [Trigger.String] returns too: the kind,
// its argument, and each setting that is not zero as key=value (keys in snake case, durations
// as Go durations, [Off] as off): "quantile 0.95" for AtQuantile(0.95), "start-aware 0.95"
// for StartAware(0.95), "quantile 0.95 window=1m0s backlog_ratio=off" for
// AtQuantile(0.95, Adaptive{Window: time.Minute, BacklogRatio: Off}), "after 20ms" for
// After(20*time.Millisecond), "tied" for Tied(), "tied tie_delay=off" for
// Tied(Adaptive{TieDelay: Off}), and "none" for the zero Trigger (no hedging).
// [Trigger.UnmarshalText] reads every one of them back.
func (t Trigger) MarshalText() ([]byte, error) {
	var b []byte
	switch t.kind {
	case triggerNone:
		return []byte("none"), nil
	case triggerQuantile:
		b = append([]byte("quantile "), strconv.FormatFloat(t.q, 'g', -1, 64)...)
	case triggerAfter:
		return []byte("after " + t.delay.String()), nil
	case triggerTied:
		b = []byte("tied")
	case triggerStartAware:
		b = append([]byte("start-aware "), strconv.FormatFloat(t.q, 'g', -1, 64)...)
	default:
		return nil, fmt.Errorf("hedge: trigger kind %d has no text form", t.kind)
	}
	for _, s := range t.settings() {
		if v, ok := formatSetting(s.ptr(&t)); ok {
			b = append(b, ' ')
			b = append(b, s.key...)
			b = append(b, '=')
			b = append(b, v...)
		}
	}
	return b, nil
}

// String returns the trigger's text form (see [Trigger.MarshalText]).
func (t Trigger) String() string {
	b, err := t.MarshalText()
	if err != nil {
		return "Trigger(?)"
	}
	return string(b)
}

// UnmarshalText parses a trigger's text form (see [Trigger.MarshalText]): "quantile Q" or
// "start-aware Q" with Q in [0.5, 1), "after D" with D a [time.ParseDuration] duration >= 0,
// "tied", or "none" (or empty) for no hedging; quantile, start-aware and tied may be followed
// by key=value settings (the fields of [Adaptive] the trigger reads, in snake case:
// minimum_delay, tie_delay, win_rate.floor for Adaptive.WinRate.Floor; off for [Off];
// use_deadline=on for UseDeadline). Words are case-insensitive and may be separated by
// any white space. An error wraps [ErrInvalidConfig] and says which forms exist; a setting's
// range is checked by [Config.Validate].
func (t *Trigger) UnmarshalText(b []byte) error {
	words := strings.Fields(string(b))
	if len(words) == 0 {
		*t = Trigger{}
		return nil
	}
	kind := strings.ToLower(words[0])
	args := words[1:]
	var nt Trigger
	switch kind {
	case "none":
		if len(args) != 0 {
			return configError("trigger %q: %q takes no argument", b, kind)
		}
		*t = Trigger{}
		return nil
	case "tied":
		nt = Tied()
	case "quantile", "start-aware":
		if len(args) == 0 || strings.Contains(args[0], "=") {
			return configError("trigger %q: %q needs the quantile, e.g. %q", b, kind, kind+" 0.95")
		}
		q, err := strconv.ParseFloat(args[0], 64)
		if err != nil || !(q >= 0.5 && q < 1) {
			return configError("trigger %q: the quantile must be a number in [0.5, 1), got %q", b, args[0])
		}
		args = args[1:]
		nt = AtQuantile(q)
		if kind == "start-aware" {
			nt = StartAware(q)
		}
	case "after":
		if len(args) != 1 {
			return configError("trigger %q: %q takes one argument, the delay", b, kind)
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d < 0 {
			return configError("trigger %q: the delay must be a duration >= 0 such as 20ms, got %q", b, args[0])
		}
		*t = After(d)
		return nil
	default:
		return configError("trigger %q: want one of %q, %q, %q, %q, %q", b, "quantile 0.95", "start-aware 0.95", "after 20ms", "tied", "none")
	}
	if err := nt.parseSettings(b, args); err != nil {
		return err
	}
	*t = nt
	return nil
}

// setting is one key=value setting of a trigger's text form.
type setting struct {
	key string
	ptr func(*Trigger) any // *time.Duration, *int, *float64 or *bool
}

var adaptiveSettings = []setting{
	{"window", func(t *Trigger) any { return &t.adaptive.Window }},
	{"minimum_samples", func(t *Trigger) any { return &t.adaptive.MinimumSamples }},
	{"minimum_delay", func(t *Trigger) any { return &t.adaptive.MinimumDelay }},
	{"maximum_delay", func(t *Trigger) any { return &t.adaptive.MaximumDelay }},
	{"minimum_in_service", func(t *Trigger) any { return &t.adaptive.MinimumInService }},
	{"backlog_ratio", func(t *Trigger) any { return &t.adaptive.BacklogRatio }},
	{"win_rate.floor", func(t *Trigger) any { return &t.adaptive.WinRate.Floor }},
	{"win_rate.window", func(t *Trigger) any { return &t.adaptive.WinRate.Window }},
	{"win_rate.minimum_samples", func(t *Trigger) any { return &t.adaptive.WinRate.MinimumSamples }},
	{"win_rate.minimum_allowance", func(t *Trigger) any { return &t.adaptive.WinRate.MinimumAllowance }},
	{"use_deadline", func(t *Trigger) any { return &t.adaptive.UseDeadline }},
}

// tiedSettings are the settings Tied reads: the estimate's, and its delay.
var tiedSettings = append(adaptiveSettings[:4:4], setting{"tie_delay", func(t *Trigger) any { return &t.adaptive.TieDelay }})

// settings lists the settings the trigger's kind reads.
func (t Trigger) settings() []setting {
	switch t.kind {
	case triggerQuantile, triggerStartAware:
		return adaptiveSettings
	case triggerTied:
		return tiedSettings
	}
	return nil
}

// formatSetting returns a setting's value in text, and false when it is zero (the default).
func formatSetting(p any) (string, bool) {
	switch v := p.(type) {
	case *time.Duration:
		if *v == Off {
			return "off", true
		}
		return v.String(), *v != 0
	case *int:
		if *v == Off {
			return "off", true
		}
		return strconv.Itoa(*v), *v != 0
	case *float64:
		if *v == Off {
			return "off", true
		}
		return strconv.FormatFloat(*v, 'g', -1, 64), *v != 0
	case *bool:
		return "on", *v
	}
	return "", false
}

// parseSettings reads key=value settings onto t, whose kind is set.
func (t *Trigger) parseSettings(b []byte, args []string) error {
	known := t.settings()
	seen := map[string]bool{}
	for _, arg := range args {
		key, value, ok := strings.Cut(arg, "=")
		key = strings.ToLower(key)
		i := slices.IndexFunc(known, func(s setting) bool { return s.key == key })
		if !ok || i < 0 {
			keys := make([]string, len(known))
			for j, s := range known {
				keys[j] = s.key
			}
			if len(keys) == 0 {
				return configError("trigger %q: %q takes no settings", b, arg)
			}
			return configError("trigger %q: %q is not a setting (want key=value with key one of %s)", b, arg, strings.Join(keys, ", "))
		}
		if seen[key] {
			return configError("trigger %q: %s is set twice", b, key)
		}
		seen[key] = true
		if err := parseSetting(known[i].ptr(t), value); err != nil {
			return configError("trigger %q: %s: %v", b, key, err)
		}
	}
	return nil
}

func parseSetting(p any, value string) error {
	off := strings.EqualFold(value, "off")
	switch v := p.(type) {
	case *time.Duration:
		if off {
			*v = Off
			return nil
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("want a duration such as 20ms, or off, got %q", value)
		}
		*v = d
	case *int:
		if off {
			*v = Off
			return nil
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("want a whole number, got %q", value)
		}
		*v = n
	case *float64:
		if off {
			*v = Off
			return nil
		}
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("want a number, or off, got %q", value)
		}
		*v = x
	case *bool:
		switch strings.ToLower(value) {
		case "on", "true":
			*v = true
		case "off", "false":
			*v = false
		default:
			return fmt.Errorf("want on or off, got %q", value)
		}
	}
	return nil
}

// MarshalText returns the reason's name, as [Reason.String] does ("budget", "win_rate", …).
func (r Reason) MarshalText() ([]byte, error) {
	if int(r) >= len(reasonNames) || reasonNames[r] == "" {
		return nil, fmt.Errorf("hedge: Reason(%d) has no name", uint8(r))
	}
	return []byte(reasonNames[r]), nil
}

// UnmarshalText parses a reason's name (case-insensitive, as [Reason.String] writes it).
func (r *Reason) UnmarshalText(b []byte) error {
	for i, name := range reasonNames {
		if name != "" && strings.EqualFold(name, string(b)) {
			*r = Reason(i)
			return nil
		}
	}
	return fmt.Errorf("hedge: unknown suppression reason %q", b)
}

// MarshalText returns the event kind's name, as [EventKind.String] does ("HedgeStarted", …).
func (k EventKind) MarshalText() ([]byte, error) {
	if int(k) >= len(eventNames) || eventNames[k] == "" {
		return nil, fmt.Errorf("hedge: EventKind(%d) has no name", uint8(k))
	}
	return []byte(eventNames[k]), nil
}

// UnmarshalText parses an event kind's name (case-insensitive).
func (k *EventKind) UnmarshalText(b []byte) error {
	for i, name := range eventNames {
		if name != "" && strings.EqualFold(name, string(b)) {
			*k = EventKind(i)
			return nil
		}
	}
	return fmt.Errorf("hedge: unknown event kind %q", b)
}

// measuredJSON is the JSON form of Measured: durations as Go duration strings, reasons by
// name, and no field a JSON encoder cannot write (an unlimited budget is +Inf).
type measuredJSON struct {
	Threshold        string           `json:"threshold,omitempty"`
	Warm             bool             `json:"warm"`
	Calls            int64            `json:"calls"`
	HedgesStarted    int64            `json:"hedges_started"`
	HedgesWon        int64            `json:"hedges_won"`
	Retries          int64            `json:"retries"`
	Suppressed       map[Reason]int64 `json:"suppressed"`
	Budget           *float64         `json:"budget"`
	Breaker          string           `json:"breaker,omitempty"`
	ErrorRate        float64          `json:"error_rate"`
	Limit            int              `json:"limit,omitempty"`
	InFlight         int              `json:"in_flight,omitempty"`
	WinRateAllowance float64          `json:"win_rate_allowance"`
	OverloadUntil    *time.Time       `json:"overload_until,omitempty"`
}

// MarshalJSON writes the figures for people and scripts to read, for example
//
//	{"threshold":"21ms","warm":true,"calls":1200,"hedges_started":60,"hedges_won":41,
//	 "retries":0,"suppressed":{"budget":3},"budget":118.5,"error_rate":0,"win_rate_allowance":1}
//
// The threshold is a Go duration (absent until warm), suppressed hedges are keyed by reason
// name, budget is null when the policy has no budget, breaker, limit and in_flight are absent
// without a breaker or a limit, and overload_until is absent when no overload was seen.
func (m Measured) MarshalJSON() ([]byte, error) {
	j := measuredJSON{
		Warm:             m.Warm,
		Calls:            m.Calls,
		HedgesStarted:    m.HedgesStarted,
		HedgesWon:        m.HedgesWon,
		Retries:          m.Retries,
		Suppressed:       m.Suppressed,
		Breaker:          m.Breaker,
		ErrorRate:        m.ErrorRate,
		Limit:            m.Limit,
		InFlight:         m.InFlight,
		WinRateAllowance: m.WinRateAllowance,
	}
	if m.Warm {
		j.Threshold = m.Threshold.String()
	}
	if j.Suppressed == nil {
		j.Suppressed = map[Reason]int64{}
	}
	if !math.IsInf(m.Budget, 0) && !math.IsNaN(m.Budget) {
		b := m.Budget
		j.Budget = &b
	}
	if !m.OverloadUntil.IsZero() {
		u := m.OverloadUntil.UTC()
		j.OverloadUntil = &u
	}
	return json.Marshal(j)
}
