package hedge_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
)

var emptyBudget = budget.Config{Ratio: budget.Zero, MinPerSecond: budget.Zero}

var refused = hedge.Outcome{Class: hedge.Retriable, Err: syscall.ECONNREFUSED, Unsent: true}

// An attempt that never reached the dependency is resent at once, even with no budget left
// and for a call that is not repeatable, and the call's next hedge is timed from the resend.
func TestCallResendsUnsentAtOnce(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: emptyBudget})
	c := p.NewCall(hedge.CallOptions{Repeatable: hedge.NotRepeatable})
	steps := []struct {
		name string
		do   func() []hedge.Action
		want string
	}{
		{"start", func() []hedge.Action { return c.Start(ms(0)) }, "start 0, timer 20ms"},
		{"refused: resent at once", func() []hedge.Action { return c.AttemptDone(ms(1), 0, refused) }, "start 1, timer 21ms"},
		{"the resend wins", func() []hedge.Action { return c.AttemptDone(ms(5), 1, hedge.Outcome{}) }, "finish 1"},
	}
	for _, s := range steps {
		if got := actions(s.do()); got != s.want {
			t.Fatalf("%s: actions %q, want %q", s.name, got, s.want)
		}
	}
	if c.Err() != nil || c.Winner() != 1 {
		t.Fatalf("winner %d err %v", c.Winner(), c.Err())
	}
}

// A refused hedge is replaced by another hedge, without a second withdrawal, and resends do
// not count against Attempts.
func TestCallResendsUnsentHedge(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Budget: noBudget})
	c := p.NewCall(hedge.CallOptions{})
	var starts []hedge.Action
	collect := func(as []hedge.Action) string {
		for _, a := range as {
			if a.Kind == hedge.StartAttempt {
				starts = append(starts, a)
			}
		}
		return actions(as)
	}
	collect(c.Start(ms(0)))
	if got := collect(c.TimerFired(ms(20))); got != "start 1 hedge" {
		t.Fatalf("timer: %q", got)
	}
	if got := collect(c.AttemptDone(ms(21), 1, refused)); got != "start 2 hedge" {
		t.Fatalf("hedge refused: %q; want it resent", got)
	}
	if got := collect(c.AttemptDone(ms(30), 2, hedge.Outcome{})); got != "cancel 0, finish 2" {
		t.Fatalf("resent hedge wins: %q", got)
	}
	if !starts[2].Resend || !starts[2].Hedge || starts[1].Resend {
		t.Fatalf("starts %+v: want the third a resent hedge", starts)
	}
	if m := p.MeasuredAt(ms(30)); m.HedgesStarted != 1 || m.HedgesWon != 1 {
		t.Fatalf("measured %+v: want one hedge started and won", m)
	}
}

// A call none of whose attempts reaches the dependency fails fast, after Attempts resends,
// with an error that names every refusal and wraps ErrUnreachable; it does not count against
// the breaker.
func TestCallUnreachableFailsFast(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Breaker: &breaker.Config{ConsecutiveFailures: 1}})
	for range 3 {
		c := p.NewCall(hedge.CallOptions{})
		got := actions(c.Start(ms(0)))
		for k := 0; !c.Done(); k++ {
			if k > 5 {
				t.Fatal("call never ended")
			}
			got += "; " + actions(c.AttemptDone(ms(1), k, refused))
		}
		if want := "start 0, timer 20ms; start 1, timer 21ms; start 2; finish -1"; got != want {
			t.Fatalf("actions %q\nwant %q", got, want)
		}
		var ae *hedge.AttemptsError
		if !errors.Is(c.Err(), hedge.ErrUnreachable) || !errors.Is(c.Err(), syscall.ECONNREFUSED) || !errors.As(c.Err(), &ae) || len(ae.Attempts) != 3 {
			t.Fatalf("err %v: want ErrUnreachable naming 3 refusals", c.Err())
		}
	}
	if s := p.MeasuredAt(ms(2)).Breaker; s != "closed" {
		t.Fatalf("breaker %s after unreachable calls; want closed", s)
	}
}

// Failures at an ejected replica do not count against the breaker; others do.
func TestCallEjectedFailuresSpareTheBreaker(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Budget: emptyBudget, Breaker: &breaker.Config{ConsecutiveFailures: 2}})
	fail := func(o hedge.Outcome) {
		c := p.NewCall(hedge.CallOptions{})
		c.Start(ms(0))
		c.AttemptDone(ms(1), 0, o)
		if !c.Done() {
			t.Fatal("call not over")
		}
	}
	for range 5 {
		fail(hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503"), Ejected: true})
	}
	if s := p.MeasuredAt(ms(2)).Breaker; s != "closed" {
		t.Fatalf("breaker %s after failures at ejected replicas; want closed", s)
	}
	fail(hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503")})
	fail(hedge.Outcome{Class: hedge.Retriable, Err: errors.New("503")})
	if s := p.MeasuredAt(ms(2)).Breaker; s != "open" {
		t.Fatalf("breaker %s after two failures in a row; want open", s)
	}
}

// Do resends an attempt whose error is marked with MarkUnsent, and tells it so.
func TestDoResendsUnsent(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Budget: emptyBudget})
	var infos []hedge.AttemptInfo
	v, err := hedge.Do(context.Background(), p, func(ctx context.Context) (int, error) {
		info, _ := hedge.AttemptFrom(ctx)
		infos = append(infos, info) // attempts run one after the other here
		if info.Index == 0 {
			return 0, hedge.MarkUnsent(syscall.ECONNREFUSED)
		}
		return 7, nil
	})
	if v != 7 || err != nil || len(infos) != 2 || !infos[1].Resend {
		t.Fatalf("v %d err %v infos %+v", v, err, infos)
	}
	if o := hedge.Classify(hedge.MarkUnsent(errors.New("x"))); !o.Unsent || o.Class != hedge.Retriable {
		t.Fatalf("Classify(MarkUnsent) = %+v", o)
	}
	if hedge.MarkUnsent(nil) != nil {
		t.Fatal("MarkUnsent(nil) != nil")
	}
}
