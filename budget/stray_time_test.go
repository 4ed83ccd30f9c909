package budget

import (
	"testing"
	"time"
)

// One call dated a year ahead (a bad clock, a bogus timestamp) must not disable the
// budget for a year: with normal traffic resumed, a minute later 10% of calls plus the
// reserve may retry or hedge again, as the latency estimator recovers from the same stray
// (latency.TestThresholdAfterStrayTime).
func TestStrayFutureTimeFreezesBudget(t *testing.T) {
	b := mustNew(t, Config{}) // 10% + 1/s over 10s
	now := base
	b.Deposit(now)
	b.Deposit(now.Add(365 * 24 * time.Hour)) // one stray timestamp
	granted := 0
	// A minute of 100 calls/s, each asking for a hedge.
	for i := 0; i < 6000; i++ {
		now = now.Add(10 * time.Millisecond)
		b.Deposit(now)
		if b.TryWithdraw(now) {
			granted++
		}
	}
	// Without the stray about 660 are granted; recovering within one Window, over 500.
	if granted < 500 {
		t.Errorf("granted %d withdrawals over a minute of 6000 calls, want >= 500 (recovered within a Window); Balance(now)=%v", granted, b.Balance(now))
	}
}
