package hedgetest_test

import (
	"testing"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

// TestScenarioOutcomesCoverEveryAttempt: Outcomes is documented as each attempt's outcome, a
// success for an attempt without a failure, for a driver that feeds outcomes to the state
// machine itself. It returned one entry per Failures entry instead, so a scenario without
// failures had no outcome at all and "fast failure of the hedge does not win" none for its
// third attempt, the one that wins: a driver reading Outcomes()[k] for attempt k panicked.
func TestScenarioOutcomesCoverEveryAttempt(t *testing.T) {
	for _, sc := range hedgetest.Scenarios() {
		out := sc.Outcomes()
		if len(out) < len(sc.Latencies) {
			t.Errorf("%s: %d outcomes for %d attempts", sc.Name, len(out), len(sc.Latencies))
			continue
		}
		for k := range sc.Latencies {
			var failure error
			if k < len(sc.Failures) {
				failure = sc.Failures[k]
			}
			if want := hedge.Classify(failure); out[k].Class != want.Class {
				t.Errorf("%s: attempt %d's outcome %v, want %v", sc.Name, k, out[k].Class, want.Class)
			}
		}
	}
}
