package hedge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// A sequential client (one call in flight at a time) is hedged on its age while the recent
// median is at its lowest (Adaptive.MinimumInService doc; README "When it hedges"). Turning
// the backlog gate off (BacklogRatio: Off, README: "hedge into a backlog too") should not
// make it hedge less.
func TestBacklogOffKeepsQuietEvidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    hedge.Adaptive
	}{
		{"default", hedge.Adaptive{}},
		{"BacklogRatio Off", hedge.Adaptive{BacklogRatio: hedge.Off}},
	} {
		p := hedge.MustNew(hedge.Config{Trigger: hedge.AtQuantile(0.95, tc.a), Budget: budget.Config{Off: true}})
		now := t0
		for range 200 { // sequential calls of 10ms
			c := p.NewCall(hedge.CallOptions{})
			c.Start(now)
			c.AttemptDone(now.Add(10*time.Millisecond), 0, hedge.Outcome{Class: hedge.Success})
			now = now.Add(20 * time.Millisecond)
		}
		c := p.NewCall(hedge.CallOptions{})
		var log []string
		acts := c.Start(now)
		for i := 0; i < 10 && !c.Done(); i++ {
			log = append(log, actions(acts))
			var at time.Time
			for _, a := range acts {
				if a.Kind == hedge.ArmTimer {
					at = a.At
				}
				if a.Kind == hedge.StartAttempt && a.Hedge {
					goto done
				}
			}
			if at.IsZero() || at.Sub(now) > time.Second {
				break
			}
			acts = c.TimerFired(at)
		}
		c.AttemptDone(now.Add(time.Second), 0, hedge.Outcome{Class: hedge.Success})
	done:
		got := strings.Join(log, " | ")
		m := p.Measured()
		t.Logf("%s: %s; started=%d suppressed=%v", tc.name, got, m.HedgesStarted, m.Suppressed)
		if m.HedgesStarted == 0 && !strings.Contains(actions(acts), "hedge") {
			t.Errorf("%s: the straggler of a sequential client was not hedged (suppressed %v)", tc.name, m.Suppressed)
		}
	}
}
