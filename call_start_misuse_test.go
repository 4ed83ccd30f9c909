package hedge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/limit"
)

func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// Start on a Call that has already started (called twice, or again after the call finished
// without Reset) took a second limit permit (and breaker ticket) that nothing would give back:
// the call is done, so AttemptDone ignores the new attempt, and the policy lost a permit for
// good. It must be refused with a hedge: message, as NewCall refuses a zero Policy.
func TestStartOnAStartedCallIsRefused(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Limit: &limit.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}})
	now := time.Unix(1000, 0)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(now)
	c.AttemptDone(now.Add(time.Millisecond), 0, hedge.Outcome{})
	if !c.Done() || c.Err() != nil {
		t.Fatalf("first call: done %v, err %v", c.Done(), c.Err())
	}
	msg := panicMessage(func() {
		c.Start(now.Add(2 * time.Millisecond)) // forgot Reset
		c.AttemptDone(now.Add(3*time.Millisecond), 1, hedge.Outcome{})
	})
	if !strings.HasPrefix(msg, "hedge: ") {
		t.Errorf("Start on a finished Call: panic %q, want a hedge: message", msg)
	}
	// Whatever Start did, the policy must still have its one permit.
	d := p.NewCall(hedge.CallOptions{})
	d.Start(now.Add(4 * time.Millisecond))
	if d.Done() {
		t.Fatalf("a fresh call after the misuse failed at once with %v: the permit leaked", d.Err())
	}
}

// A Call not prepared by NewCall or Reset with a policy panics with a hedge: message naming
// the fix, as NewCall and Do do for a zero Policy, not with a nil pointer dereference.
func TestStartWithoutAPolicyPanicsWithAMessage(t *testing.T) {
	now := time.Unix(1000, 0)
	for name, c := range map[string]func() *hedge.Call{
		"zero Call": func() *hedge.Call { return new(hedge.Call) },
		"Reset(nil)": func() *hedge.Call {
			c := new(hedge.Call)
			c.Reset(nil, hedge.CallOptions{})
			return c
		},
	} {
		msg := panicMessage(func() { c().Start(now) })
		if !strings.HasPrefix(msg, "hedge: ") {
			t.Errorf("%s: Start panics with %q, want a hedge: message", name, msg)
		}
	}
}
