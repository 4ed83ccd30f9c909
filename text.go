package hedge

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
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

// MarshalText returns the trigger's text form: "quantile 0.95" for AtQuantile(0.95),
// "start-aware 0.95" for StartAware(0.95), "after 20ms" for After(20*time.Millisecond),
// "tied" for Tied() and "none" for the zero Trigger (no hedging). [Trigger.UnmarshalText] reads every one of them back.
func (t Trigger) MarshalText() ([]byte, error) {
	switch t.kind {
	case triggerNone:
		return []byte("none"), nil
	case triggerQuantile:
		return []byte("quantile " + strconv.FormatFloat(t.q, 'g', -1, 64)), nil
	case triggerAfter:
		return []byte("after " + t.delay.String()), nil
	case triggerTied:
		return []byte("tied"), nil
	case triggerStartAware:
		return []byte("start-aware " + strconv.FormatFloat(t.q, 'g', -1, 64)), nil
	}
	return nil, fmt.Errorf("hedge: trigger kind %d has no text form", t.kind)
}

// UnmarshalText parses a trigger's text form (see [Trigger.MarshalText]): "quantile Q" or
// "start-aware Q" with Q in [0.5, 1), "after D" with D a [time.ParseDuration] duration >= 0, "tied", or "none"
// (or empty) for no hedging. Words are case-insensitive and may be separated by any
// white space. An error wraps [ErrInvalidConfig] and says which forms exist.
func (t *Trigger) UnmarshalText(b []byte) error {
	words := strings.Fields(string(b))
	if len(words) == 0 {
		*t = Trigger{}
		return nil
	}
	kind := strings.ToLower(words[0])
	args := words[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", configError("trigger %q: %q takes one argument", b, kind)
		}
		return args[0], nil
	}
	switch kind {
	case "none", "tied":
		if len(args) != 0 {
			return configError("trigger %q: %q takes no argument", b, kind)
		}
		if kind == "tied" {
			*t = Tied()
		} else {
			*t = Trigger{}
		}
		return nil
	case "quantile", "start-aware":
		a, err := one()
		if err != nil {
			return err
		}
		q, err := strconv.ParseFloat(a, 64)
		if err != nil || !(q >= 0.5 && q < 1) {
			return configError("trigger %q: the quantile must be a number in [0.5, 1), got %q", b, a)
		}
		if kind == "start-aware" {
			*t = StartAware(q)
		} else {
			*t = AtQuantile(q)
		}
		return nil
	case "after":
		a, err := one()
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(a)
		if err != nil || d < 0 {
			return configError("trigger %q: the delay must be a duration >= 0 such as 20ms, got %q", b, a)
		}
		*t = After(d)
		return nil
	}
	return configError("trigger %q: want one of %q, %q, %q, %q, %q", b, "quantile 0.95", "start-aware 0.95", "after 20ms", "tied", "none")
}

// MarshalText returns the reason's name, as [Reason.String] does ("budget", "win rate", …).
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
