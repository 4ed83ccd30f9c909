package hedge_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }

func actions(as []hedge.Action) string {
	var parts []string
	for _, a := range as {
		switch a.Kind {
		case hedge.StartAttempt:
			kind := ""
			if a.Hedge {
				kind = " hedge"
			}
			if a.Retry {
				kind = " retry"
			}
			parts = append(parts, fmt.Sprintf("start %d%s", a.Attempt, kind))
		case hedge.CancelAttempt:
			parts = append(parts, fmt.Sprintf("cancel %d", a.Attempt))
		case hedge.ArmTimer:
			parts = append(parts, fmt.Sprintf("timer %v", a.At.Sub(t0)))
		case hedge.Finish:
			parts = append(parts, fmt.Sprintf("finish %d", a.Attempt))
		}
	}
	return strings.Join(parts, ", ")
}

// TestCallStateMachineScript drives the state machine with scripted events and no
// goroutines: exactly what the simulator does.
func TestCallStateMachineScript(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Attempts: 3, MaximumConcurrent: 2, Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	steps := []struct {
		name string
		do   func() []hedge.Action
		want string
	}{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer 20ms"},
		{"early timer is ignored", func() []hedge.Action { return c.TimerFired(ms(19)) }, ""},
		{"threshold fires", func() []hedge.Action { return c.TimerFired(ms(20)) }, "start 1 hedge"},
		{"hedge fails fast: another hedge one threshold after it started", func() []hedge.Action {
			return c.AttemptDone(ms(22), 1, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503")})
		}, "timer 40ms"},
		{"second hedge", func() []hedge.Action { return c.TimerFired(ms(40)) }, "start 2 hedge"},
		{"a stale timer does nothing", func() []hedge.Action { return c.TimerFired(ms(41)) }, ""},
		{"hedge 2 wins", func() []hedge.Action { return c.AttemptDone(ms(45), 2, hedge.Outcome{Class: hedge.Success}) }, "cancel 0, finish 2"},
		{"late answer of the loser is ignored", func() []hedge.Action { return c.AttemptDone(ms(90), 0, hedge.Outcome{}) }, ""},
	}
	for _, s := range steps {
		if got := actions(s.do()); got != s.want {
			t.Fatalf("%s: actions %q, want %q", s.name, got, s.want)
		}
	}
	if !c.Done() || c.Winner() != 2 || c.Err() != nil {
		t.Fatalf("done %v winner %d err %v", c.Done(), c.Winner(), c.Err())
	}
	want := "3 attempts over 45ms: hedge failed (2ms), at 20ms, hedge OK (5ms), at 40ms, discarded (45ms)"
	if got := c.Log().String(); got != want {
		t.Errorf("log %q\nwant %q", got, want)
	}
}

func TestCallRetryScript(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget, Backoff: hedge.Backoff{Initial: 30 * time.Millisecond, Jitter: -1}})
	c := p.NewCall(hedge.CallOptions{})
	if got := actions(c.Start(ms(0))); got != "start 0" {
		t.Fatalf("start: %q", got)
	}
	if got := actions(c.AttemptDone(ms(2), 0, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("reset")})); got != "timer 32ms" {
		t.Fatalf("failure: %q, want a retry timer after the 30ms backoff", got)
	}
	if got := actions(c.TimerFired(ms(32))); got != "start 1 retry" {
		t.Fatalf("timer: %q", got)
	}
	if got := actions(c.AttemptDone(ms(40), 1, hedge.Outcome{Class: hedge.Success})); got != "finish 1" {
		t.Fatalf("success: %q", got)
	}
	if got, want := c.Log().String(), "2 attempts over 40ms: failed (2ms), retry OK (8ms), at 32ms"; got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

func TestCallCancelScript(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.TimerFired(ms(10))
	cause := errors.New("caller gave up")
	if got := actions(c.Cancel(ms(15), cause)); got != "cancel 0, cancel 1, finish -1" {
		t.Fatalf("cancel: %q", got)
	}
	if !errors.Is(c.Err(), cause) {
		t.Errorf("Err = %v, want the cause", c.Err())
	}
}

func TestCallTiedScript(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	if got := actions(c.Start(ms(0))); got != "start 0, start 1 hedge" {
		t.Fatalf("start: %q, want both copies at once", got)
	}
	if got := actions(c.AttemptStartedService(ms(3), 1)); got != "cancel 0" {
		t.Fatalf("service start: %q, want the queued copy cancelled", got)
	}
	if got := actions(c.AttemptDone(ms(13), 1, hedge.Outcome{})); got != "finish 1" {
		t.Fatalf("done: %q", got)
	}
}

func TestCallResetReusesWithoutLeakingState(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.TimerFired(ms(10))
	c.AttemptDone(ms(12), 1, hedge.Outcome{})
	c.Reset(p, hedge.CallOptions{})
	if c.Done() || c.Winner() != -1 || c.Attempts() != 0 {
		t.Fatalf("after Reset: done %v winner %d attempts %d", c.Done(), c.Winner(), c.Attempts())
	}
	if got := actions(c.Start(ms(100))); got != "start 0, timer 110ms" {
		t.Fatalf("restart: %q", got)
	}
	allocs := testing.AllocsPerRun(100, func() {
		c.Reset(p, hedge.CallOptions{})
		c.Start(ms(0))
		c.TimerFired(ms(10))
		c.AttemptDone(ms(12), 1, hedge.Outcome{})
	})
	if allocs != 0 {
		t.Errorf("a reused Call allocates %v times per call, want 0", allocs)
	}
}

// TestCallRetryWaitsPushback: an answer that asks to be left alone for 800ms (gRPC's
// pushback) holds the call's retry back that long, not just the backoff.
func TestCallRetryWaitsPushback(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget, Backoff: hedge.Backoff{Initial: 5 * time.Millisecond, Jitter: -1}})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	o := hedge.Outcome{Class: hedge.Retriable, Err: errors.New("RESOURCE_EXHAUSTED"), Overload: true, RetryAfter: 800 * time.Millisecond}
	if got := actions(c.AttemptDone(ms(2), 0, o)); got != "timer 802ms" {
		t.Fatalf("pushback: %q, want the retry 800ms after the answer", got)
	}
	if got := actions(c.TimerFired(ms(7))); got != "" {
		t.Fatalf("at the backoff: %q, want nothing before the pushback", got)
	}
	if got := actions(c.TimerFired(ms(802))); got != "start 1 retry" {
		t.Fatalf("at the pushback: %q", got)
	}
}

// gRFC A6's hedging: a non-fatal failure sends the next copy at once (Next), a fatal one
// ends the call at once, cancelling the copies still running (Commit).
func TestCallNextAndCommit(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Second), Attempts: 3, MaximumConcurrent: 3, Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	c.TimerFired(ms(1000))
	next := hedge.Outcome{Class: hedge.Retriable, Err: errors.New("UNAVAILABLE"), Next: true}
	if got := actions(c.AttemptDone(ms(1002), 1, next)); got != "start 2 hedge" {
		t.Fatalf("non-fatal: %q, want the next copy at once", got)
	}
	commit := hedge.Outcome{Class: hedge.Permanent, Err: errors.New("INVALID_ARGUMENT"), Commit: true}
	if got := actions(c.AttemptDone(ms(1003), 2, commit)); got != "cancel 0, finish -1" {
		t.Fatalf("fatal: %q, want the call ended at once", got)
	}
	r := hedge.MustNew(hedge.Config{Attempts: 2, Budget: noBudget, Backoff: hedge.Backoff{Initial: time.Second, Jitter: -1}})
	c = r.NewCall(hedge.CallOptions{})
	c.Start(ms(0))
	if got := actions(c.AttemptDone(ms(5), 0, next)); got != "timer 5ms" {
		t.Fatalf("non-fatal, nothing in flight: %q, want the next attempt at once", got)
	}
}
