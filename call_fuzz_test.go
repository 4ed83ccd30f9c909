package hedge_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/limit"
)

// FuzzCall drives the state machine with arbitrary event sequences and checks the invariants
// both drivers rely on: attempts start at most Attempts times and at most MaximumConcurrent at
// once, every action names an attempt that exists, Finish comes exactly once and nothing after
// it, a winner answered with success, and permits go back to the limit.
func FuzzCall(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(0), []byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(uint8(2), uint8(2), uint8(1), []byte{9, 9, 1, 1, 0, 3})
	f.Add(uint8(4), uint8(3), uint8(2), []byte{2, 2, 2, 2, 2, 2, 5, 5, 5})
	f.Add(uint8(2), uint8(2), uint8(0), []byte{5, 5, 0x15, 1, 0x25, 5, 4})
	f.Fuzz(func(t *testing.T, attempts, maxConc, kind uint8, script []byte) {
		cfg := hedge.Config{Attempts: int(attempts%4) + 2, Budget: budget.Config{Off: true},
			Limit: &limit.Config{}, Breaker: &breaker.Config{}, Backoff: hedge.Backoff{Initial: time.Millisecond}}
		cfg.MaximumConcurrent = min(int(maxConc%3)+1, cfg.Attempts)
		switch kind % 3 {
		case 0:
			cfg.Trigger = hedge.After(5 * time.Millisecond)
		case 1:
			cfg.Trigger = hedge.Tied()
		case 2:
			cfg.Trigger = hedge.After(0)
		}
		if cfg.MaximumConcurrent < 2 {
			cfg.Trigger = hedge.Trigger{} // one in flight at most: retries alone (a trigger is refused)
		}
		p := hedge.MustNew(cfg)
		c := p.NewCall(hedge.CallOptions{})
		now := t0
		started, finished, resent := 0, 0, 0
		running := map[int]bool{}
		var timerAt time.Time
		check := func(acts []hedge.Action) {
			for _, a := range acts {
				if finished > 0 {
					t.Fatalf("action %v after Finish", a.Kind)
				}
				switch a.Kind {
				case hedge.StartAttempt:
					if a.Attempt != started {
						t.Fatalf("started attempt %d, want %d", a.Attempt, started)
					}
					started++
					if a.Resend {
						resent++
					}
					running[a.Attempt] = true
				case hedge.CancelAttempt:
					if !running[a.Attempt] {
						t.Fatalf("cancelled attempt %d, which is not running", a.Attempt)
					}
					delete(running, a.Attempt)
				case hedge.ArmTimer:
					timerAt = a.At
				case hedge.Finish:
					finished++
				}
			}
			if started-resent > cfg.Attempts || resent > cfg.Attempts {
				t.Fatalf("%d attempts started, %d of them resent; Attempts is %d", started, resent, cfg.Attempts)
			}
			if len(running) > cfg.MaximumConcurrent {
				t.Fatalf("%d attempts in flight, MaximumConcurrent is %d", len(running), cfg.MaximumConcurrent)
			}
		}
		check(c.Start(now))
		for _, b := range script {
			if c.Done() {
				break
			}
			now = now.Add(time.Duration(b%7) * time.Millisecond)
			k := int(b>>4) % (started + 1)
			var acts []hedge.Action
			switch b % 6 {
			case 0:
				acts = c.TimerFired(now)
			case 1:
				acts = c.TimerFired(timerAt)
				if timerAt.After(now) {
					now = timerAt
				}
			case 2:
				acts = c.AttemptDone(now, k, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("x")})
				delete(running, k)
			case 3:
				acts = c.AttemptStartedService(now, k)
			case 4:
				acts = c.AttemptDone(now, k, hedge.Outcome{})
				delete(running, k)
			case 5:
				acts = c.AttemptDone(now, k, hedge.Outcome{Class: hedge.Retriable, Err: errors.New("refused"), Unsent: true})
				delete(running, k)
			}
			check(acts)
		}
		if !c.Done() {
			check(c.Cancel(now, errors.New("caller gave up")))
		}
		if finished != 1 {
			t.Fatalf("Finish came %d times, want once", finished)
		}
		if w := c.Winner(); w >= 0 {
			if c.Err() != nil {
				t.Fatalf("winner %d and error %v", w, c.Err())
			}
			lg := c.Log()
			ok := false
			for _, a := range lg.Attempts {
				ok = ok || (a.Index == w && a.Result == hedge.OK)
			}
			if !ok {
				t.Fatalf("winner %d is not OK in the log %s", w, lg)
			}
		} else if c.Err() == nil {
			t.Fatal("no winner and no error")
		}
		if m := p.MeasuredAt(now); m.InFlight != 0 {
			t.Fatalf("%d permits still held after the call", m.InFlight)
		}
		if got := len(c.Log().Attempts); got != started {
			t.Fatalf("log has %d attempts, %d were started", got, started)
		}
	})
}
