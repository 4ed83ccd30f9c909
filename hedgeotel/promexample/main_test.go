package main

import (
	"strings"
	"testing"
)

// A short run exports the instruments under their Prometheus names.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out, 200, "127.0.0.1:0", 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"hedge_calls_total{", "hedge_attempt_duration_seconds_count{", "hedge_call_duration_seconds_sum{",
		"hedge_budget_balance", "hedge_win_rate_allowance", "hedge_calls_over_bound_total{",
	} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("the scrape has no %s:\n%s", name, out.String())
		}
	}
	if !strings.Contains(out.String(), `hedge_call_outcome="ok"`) {
		t.Errorf("no successful calls:\n%s", out.String())
	}
}
