package hedgetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
)

// A Driver makes calls under a policy built from cfg, the way one of the library's drivers
// does (hedge.Do, an HTTP Transport, a gRPC interceptor, ...). It is called inside a
// testing/synctest bubble, and whatever it starts (servers, connections) it stops with
// t.Cleanup. hook, when not nil, runs at the start of every attempt on the caller's side of
// the wire with the attempt's context (in the attempt function, an http.RoundTripper under a
// Transport, an interceptor further down a gRPC chain): it is how [TestDriver] checks what
// user code inside an attempt sees.
type Driver func(t *testing.T, cfg hedge.Config, hook func(ctx context.Context)) CallFunc

// CallFunc makes one call whose attempt k plays answers[k] (see [Script]; a transport's server
// plays it, finding k from the attempt's metadata), and returns the winner's Value.
type CallFunc func(ctx context.Context, answers []Answer[string]) (string, error)

// TestDriver checks that drive makes the state machine's decisions, as every driver must: it
// plays each of [Scenarios] through drive, in a synctest bubble of its own, and compares the
// call's log ([hedge.WithLog]) with the scenario's. Then it checks, through hook, what user
// code inside an attempt sees and what reaches the caller: [hedge.AttemptFrom] and
// [hedge.LostSlow] on the attempt's context, a panic in an attempt (the first, on the
// caller's goroutine, or a hedge on its own) reaching the caller as a *[hedge.PanicError],
// and runtime.Goexit in an attempt ending the caller's goroutine. The bubbles check that
// nothing is left running.
func TestDriver(t *testing.T, drive Driver) {
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range Scenarios() {
			t.Run(sc.Name, func(t *testing.T) {
				var log hedge.Log
				var err error
				synctest.Test(t, func(t *testing.T) {
					call := drive(t, sc.Config, nil)
					for range sc.Warm {
						if _, err := call(t.Context(), WarmAnswers()); err != nil {
							t.Fatalf("warm call: %v", err)
						}
						time.Sleep(5 * time.Millisecond)
					}
					_, err = call(hedge.WithLog(t.Context(), &log), sc.Answers())
				})
				if got := log.String(); got != sc.Want {
					t.Errorf("log\n got  %s\n want %s", got, sc.Want)
				}
				if (err != nil) != sc.WantErr {
					t.Errorf("err = %v, want an error: %v", err, sc.WantErr)
				}
			})
		}
	})
	t.Run("AttemptFrom and LostSlow", func(t *testing.T) { checkAttemptContext(t, drive) })
	for _, k := range []int{0, 1} {
		t.Run(fmt.Sprint("panic in attempt ", k), func(t *testing.T) { checkPanic(t, drive, k) })
		t.Run(fmt.Sprint("Goexit in attempt ", k), func(t *testing.T) { checkGoexit(t, drive, k) })
	}
}

// raceConfig hedges after 10ms, once.
var raceConfig = hedge.Config{Trigger: hedge.After(10 * time.Millisecond)}

// raceAnswers: the primary is stuck, the hedge answers 1ms after it is sent.
var raceAnswers = []Answer[string]{{Stuck: true}, {After: time.Millisecond, Value: "hedge"}}

// checkAttemptContext checks what the hook sees in a call whose hedge beats a stuck primary
// past the threshold: each attempt's AttemptInfo, and LostSlow for the primary alone.
func checkAttemptContext(t *testing.T, drive Driver) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		infos := map[int]hedge.AttemptInfo{}
		ctxs := map[int]context.Context{}
		call := drive(t, raceConfig, func(ctx context.Context) {
			info, ok := hedge.AttemptFrom(ctx)
			if !ok {
				t.Error("hedge.AttemptFrom reports nothing inside an attempt")
				return
			}
			mu.Lock()
			defer mu.Unlock()
			infos[info.Index], ctxs[info.Index] = info, ctx
		})
		v, err := call(t.Context(), raceAnswers)
		if err != nil || v != "hedge" {
			t.Fatalf("call = %q, %v; want the hedge's answer", v, err)
		}
		synctest.Wait() // the primary has seen its cancellation
		mu.Lock()
		defer mu.Unlock()
		if len(infos) != 2 || infos[0].Hedge || !infos[1].Hedge || infos[1].Index != 1 {
			t.Fatalf("attempts saw %+v; want attempt 0, then hedge 1", infos)
		}
		if ctxs[0].Err() == nil {
			t.Fatal("the losing primary's context is not cancelled")
		}
		if !hedge.LostSlow(ctxs[0]) || hedge.LostSlow(ctxs[1]) {
			t.Errorf("LostSlow: primary %v, hedge %v; want true, false (the primary lost past the threshold)",
				hedge.LostSlow(ctxs[0]), hedge.LostSlow(ctxs[1]))
		}
	})
}

// checkPanic checks that a panic in attempt which reaches the caller as a *hedge.PanicError.
func checkPanic(t *testing.T, drive Driver, which int) {
	synctest.Test(t, func(t *testing.T) {
		call := drive(t, raceConfig, func(ctx context.Context) {
			if info, _ := hedge.AttemptFrom(ctx); info.Index == which {
				panic("boom")
			}
		})
		var got any
		func() {
			defer func() { got = recover() }()
			call(t.Context(), raceAnswers)
		}()
		var pe *hedge.PanicError
		if err, ok := got.(error); !ok || !errors.As(err, &pe) || pe.Value != "boom" || pe.Where != "attempt" {
			t.Fatalf("recovered %v, want a *hedge.PanicError carrying boom", got)
		}
	})
}

// checkGoexit checks that runtime.Goexit in attempt which ends the caller's goroutine: the
// call neither returns nor panics.
func checkGoexit(t *testing.T, drive Driver, which int) {
	synctest.Test(t, func(t *testing.T) {
		call := drive(t, raceConfig, func(ctx context.Context) {
			if info, _ := hedge.AttemptFrom(ctx); info.Index == which {
				runtime.Goexit()
			}
		})
		var returned, panicked bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { panicked = recover() != nil }()
			call(t.Context(), raceAnswers)
			returned = true
		}()
		<-done
		if returned || panicked {
			t.Fatalf("the call returned (%v) or panicked (%v); runtime.Goexit must end the caller's goroutine", returned, panicked)
		}
	})
}
