package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The pacer is the open-loop half of the load generator: it decides when each call is due
// (Poisson arrivals, drawn in advance from a seed) and sends it then, whatever the calls sent
// before it are doing. A call's latency is measured from the moment it was due, not from the
// moment the pacer got round to sending it: when the generator stalls, the calls it should
// have sent during the stall still count the stall, so a slow server cannot slow its own
// load down and hide its queue (coordinated omission).

// ErrBehind is returned (wrapped in a *BehindError) when the generator cannot offer the load
// it was asked for: a call was sent later than the allowed lag after it was due, or more calls
// were in flight than the client may hold. Figures from such a run would describe a lighter
// or burstier load than the one asked for, so the run stops instead.
var ErrBehind = errors.New("hedgeload: the load generator fell behind its schedule")

// BehindError says how far behind the generator was, and on which call.
type BehindError struct {
	Call     int           // index of the call (in arrival order) that was late or over the limit
	Lag      time.Duration // how long after its due time it would have been sent (wire time)
	MaxLag   time.Duration // the allowed lag
	InFlight int           // calls in flight when it stopped
	Limit    int           // the allowed calls in flight (0: the lag was the problem)
	// Queued is how many requests waited in the servers' queues as the limit stopped the run
	// (with a Limit, and a pacer that can tell): the calls in flight then are still in
	// flight, where after the run they have ended.
	Queued int
	// Sustained: the p99 of the lag over the whole point (Lag) was above MaxLag, though no
	// single call was later than the run's limit.
	Sustained bool
}

func (e *BehindError) Error() string {
	if e.Sustained {
		return fmt.Sprintf("%v: 1 %% of the calls were sent %v or more after they were due (limit %v): the machine cannot offer this load evenly",
			ErrBehind, e.Lag.Round(time.Microsecond), e.MaxLag)
	}
	if e.Limit > 0 {
		return fmt.Sprintf("%v: %d calls in flight at call %d (limit %d): the client cannot keep up with the offered load",
			ErrBehind, e.InFlight, e.Call, e.Limit)
	}
	return fmt.Sprintf("%v: call %d was sent %v after it was due (limit %v): the machine cannot offer this load",
		ErrBehind, e.Call, e.Lag.Round(time.Microsecond), e.MaxLag)
}

func (e *BehindError) Unwrap() error { return ErrBehind }

// poissonOffsets returns n send times, as offsets from the start of the run, of a Poisson
// process of the given rate (calls per second), drawn from seed: the same seed and rate give
// the same schedule.
func poissonOffsets(n int, rate float64, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 0x7061636572)) // "pacer"
	out := make([]time.Duration, n)
	var t float64 // seconds
	for i := range out {
		t += r.ExpFloat64() / rate
		out[i] = time.Duration(t * 1e9)
	}
	return out
}

// normalise rescales offsets so that the calls from..to-1 arrive at exactly rate on average:
// their span is (to-from)/rate. A Poisson draw of a few thousand calls is a few per cent
// denser or sparser than its rate (seed 1's 20,000 measured calls are 2.5 % denser), which
// would offer the real servers more or less load than the model's ρ; rescaled, the schedule
// keeps its burstiness and offers exactly the nominal load over the calls that are measured.
func normalise(offsets []time.Duration, rate float64, from, to int) {
	if from < 1 || to > len(offsets) || to-from < 2 {
		return
	}
	span := float64(offsets[to-1] - offsets[from-1])
	if span <= 0 {
		return
	}
	f := float64(to-from) / rate * 1e9 / span
	for i := range offsets {
		offsets[i] = time.Duration(float64(offsets[i]) * f)
	}
}

// pacer sends calls at their due times. Its zero value is not usable: fill every field.
type pacer struct {
	// offsets are the due times of the calls, from the start of the run, in order.
	offsets []time.Duration
	// maxLag: a call sent later than this after it was due stops the run.
	maxLag time.Duration
	// maxInFlight: a call due while this many calls are in flight stops the run.
	maxInFlight int
	// send makes call i, due at the given time, and returns when the call has ended. It runs
	// on its own goroutine, so calls overlap as their server makes them.
	send func(i int, due time.Time)
	// launch starts send; nil means "go". A test seam: a test's launch can stall the pacer.
	launch func(f func())
	// closed > 0 ignores offsets: that many callers send len(offsets) calls in a closed loop
	// (see runCallers), each call due when its caller sends it.
	closed int
	// queued, when not nil, counts the requests waiting in the servers' queues, for a
	// BehindError's Queued.
	queued func() int

	inFlight atomic.Int64
	maxSeen  int             // the most calls in flight at a send
	lags     []time.Duration // lag of each call sent, wire time
}

// run sends every call at its due time, from start, and waits for the calls it sent to end.
// It returns a *BehindError when the generator fell behind (the calls already sent still
// end first), and ctx's error when ctx is done before every call was sent.
func (p *pacer) run(ctx context.Context, start time.Time) error {
	if p.closed > 0 {
		// Each call is sent the moment its caller is free: it is never late.
		p.maxSeen = p.closed
		n, err := runCallers(ctx, p.closed, len(p.offsets), p.send)
		p.lags = make([]time.Duration, n)
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	launch := p.launch
	if launch == nil {
		launch = func(f func()) { go f() }
	}
	p.lags = make([]time.Duration, 0, len(p.offsets))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i, off := range p.offsets {
		due := start.Add(off)
		now := time.Now()
		if wait := due.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			now = time.Now()
		} else if err := ctx.Err(); err != nil {
			return err
		}
		lag := max(now.Sub(due), 0)
		if lag > p.maxLag {
			return &BehindError{Call: i, Lag: lag, MaxLag: p.maxLag, InFlight: int(p.inFlight.Load())}
		}
		if n := int(p.inFlight.Load()); n >= p.maxInFlight {
			be := &BehindError{Call: i, Lag: lag, MaxLag: p.maxLag, InFlight: n, Limit: p.maxInFlight}
			if p.queued != nil {
				be.Queued = p.queued()
			}
			return be
		}
		p.maxSeen = max(p.maxSeen, int(p.inFlight.Load()))
		p.lags = append(p.lags, lag)
		p.inFlight.Add(1)
		wg.Add(1)
		launch(func() {
			defer wg.Done()
			defer p.inFlight.Add(-1)
			p.send(i, due)
		})
	}
	return nil
}

// checkLag is the rule for a generator that was often late without ever being later than
// maxLag: when 1 % of the calls were sent more than maxLag/20 after they were due, the load was
// burstier than the model's, and the point's figures would not describe the model. (A rare
// stall is counted in the latencies of the calls it delayed, as it should be; a frequent one
// would move the percentiles themselves.)
func checkLag(lags []time.Duration, maxLag time.Duration) error {
	if len(lags) == 0 {
		return nil
	}
	s := slices.Clone(lags)
	slices.Sort(s)
	if p99 := s[len(s)*99/100]; p99 > maxLag/20 {
		return &BehindError{Call: -1, Lag: p99, MaxLag: maxLag / 20, Sustained: true}
	}
	return nil
}
