package hedgetest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgetest"
)

func TestScriptPlaysEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Attempts: 3,
			Budget: budget.Config{Off: true}})
		fail := errors.New("503")
		start := time.Now()
		var lg hedge.Log
		v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
			hedgetest.Answer[string]{After: 100 * time.Millisecond, Value: "primary"},
			hedgetest.Answer[string]{After: time.Millisecond, Err: fail},
			hedgetest.Answer[string]{After: 2 * time.Millisecond, Value: "second hedge"},
		))
		if err != nil || v != "second hedge" {
			t.Fatalf("Do = %q, %v", v, err)
		}
		// hedge 1 at 10ms fails at 11ms; hedge 2 one threshold after hedge 1 started, at 20ms,
		// answers at 22ms.
		if got := time.Since(start); got != 22*time.Millisecond {
			t.Errorf("answered after %v, want 22ms", got)
		}
		if want := "3 attempts over 22ms: hedge failed (1ms), at 10ms, hedge OK (2ms), at 20ms, discarded (22ms)"; lg.String() != want {
			t.Errorf("log %q, want %q", lg, want)
		}
	})
}

func TestScriptStuckAttemptsWaitForTheirContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		fn := hedgetest.Script[int]() // every attempt is beyond the script: stuck
		start := time.Now()
		_, err := fn(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 30*time.Millisecond {
			t.Fatalf("stuck attempt returned %v after %v; want DeadlineExceeded at 30ms", err, time.Since(start))
		}
	})
}

// TestReadmeSnippet is the README's example of testing Do in a bubble, checked.
func TestReadmeSnippet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond)})
		start := time.Now()
		v, _ := hedge.Do(t.Context(), p, hedgetest.Script(
			hedgetest.Answer[string]{Stuck: true},                          // the primary hangs
			hedgetest.Answer[string]{After: time.Millisecond, Value: "ok"}, // the hedge answers
		))
		// v == "ok", time.Since(start) == 11ms
		if v != "ok" || time.Since(start) != 11*time.Millisecond {
			t.Fatalf("v = %q after %v; want ok after 11ms", v, time.Since(start))
		}
	})
}

// TestScriptStartsReportsAtStartAfter: an attempt with Starts tells its call that its server
// started it, StartAfter after it began (with Tied sending both copies at once, that cancels
// the other copy then); a StartAfter beyond After is never reached.
func TestScriptStartsReportsAtStartAfter(t *testing.T) {
	for _, c := range []struct {
		startAfter time.Duration
		want       string
	}{
		{5 * time.Millisecond, "2 attempts over 20ms: hedge discarded (5ms), OK (20ms)"},
		{30 * time.Millisecond, "2 attempts over 20ms: OK (20ms), hedge discarded (20ms)"},
	} {
		synctest.Test(t, func(t *testing.T) {
			p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: budget.Config{Off: true}})
			var lg hedge.Log
			v, err := hedge.Do(hedge.WithLog(t.Context(), &lg), p, hedgetest.Script(
				hedgetest.Answer[string]{Starts: true, StartAfter: c.startAfter, After: 20 * time.Millisecond, Value: "primary"},
				hedgetest.Answer[string]{After: 25 * time.Millisecond, Value: "copy"},
			))
			if err != nil || v != "primary" || lg.String() != c.want {
				t.Errorf("StartAfter %v: Do = %q, %v, log %q; want primary, log %q", c.startAfter, v, err, lg, c.want)
			}
		})
	}
}
