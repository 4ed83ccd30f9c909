package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// ClientDelay is CPU contention on the callers: a machine the clients share with other work,
// a garbage collector, more goroutines than cores. While a client is busy (the first For of
// every Every), what it does waits for a CPU first: each answer reaches the state machine late
// by a delay drawn from an exponential distribution with mean Busy, and each timer fires late
// by one with mean Timers (a timer wakes one goroutine; an answer passes through several,
// each of which waits). The servers see nothing of it: their queues are as they would be, so
// a policy that reads the clients' own slowness as a backlog stops hedging with no backlog
// anywhere.
type ClientDelay struct {
	Every, For   time.Duration
	Busy, Timers time.Duration
	// Answers, when not nil, replaces the exponential of mean Busy: each answer is late by a
	// draw from it (a measured distribution of the client's own delay, say).
	Answers Distribution
	// Sends, when not nil, makes each call that arrives while the client is busy leave the
	// client late by a draw from it (a load generator late to its schedule, say): its first
	// attempt, and the timers it arms, start that much after its arrival, from which its
	// latency still counts.
	Sends Distribution
	// Wakeups, when not nil, replaces the exponential of mean Timers: each timer fires late by
	// a draw from it (a measured distribution of how late the client's own timers fired).
	Wakeups Distribution
	// Hedges, when not nil, replaces Answers for the attempts after a call's first (hedges,
	// retries): each of their answers is late by a draw from it. A real client sends them
	// another way than the first (from the goroutine its timer woke, on a connection of their
	// own) and hands their answers to the caller another way, and its delay on them is
	// measured apart.
	Hedges Distribution
}

func (d ClientDelay) zero() bool {
	return d.Every == 0 && d.For == 0 && d.Busy == 0 && d.Timers == 0 && d.Answers == nil && d.Sends == nil &&
		d.Wakeups == nil && d.Hedges == nil
}

func (d ClientDelay) check() error {
	if d.Every < 0 || d.For < 0 || d.For > d.Every || d.Busy < 0 || d.Timers < 0 || (d.Every == 0 && !d.zero()) {
		return fmt.Errorf("sim: ClientDelay needs 0 <= For <= Every, Every > 0, Busy and Timers >= 0; got %+v", d)
	}
	for _, dist := range []Distribution{d.Answers, d.Sends, d.Wakeups, d.Hedges} {
		if dist == nil {
			continue
		}
		if sr, ok := dist.(Series); ok {
			if err := sr.check(); err != nil {
				return err
			}
			continue
		}
		if err := validateDistribution(dist); err != nil {
			return err
		}
	}
	return nil
}

// streamBusy is the random stream of the clients' own delays.
const streamBusy uint64 = 0x62757379 // "busy"

// clientLag is a ClientDelay compiled for a run. It draws each late event's delay from a
// stream of its own, which nothing else draws from, seeded afresh for each event by what the
// event is (an answer to attempt k of call i, a timer of call i due e after it arrived, the
// send of call i): the same event is as late under every setup of a comparison, however many
// other events the setups draw for (common random numbers, as for service times).
type clientLag struct {
	every, on    int64
	busy, timers float64 // means, ns
	answers      Distribution
	sends        Distribution
	wakeups      Distribution
	hedges       Distribution
	key          uint64 // the run's stream of delays
	rng          rand.PCG
	r            *rand.Rand
}

// The kinds of event a client is late to, each drawn apart.
const (
	lagAnswer uint64 = iota + 1
	lagTimer
	lagSend
)

func (l *clientLag) reset(d ClientDelay, seed uint64) {
	l.every, l.on = int64(d.Every), int64(d.For)
	l.busy, l.timers, l.answers, l.sends = float64(d.Busy), float64(d.Timers), d.Answers, d.Sends
	l.wakeups, l.hedges = d.Wakeups, d.Hedges
	l.key = streamKey(seed, streamBusy)
	if l.r == nil {
		l.r = rand.New(&l.rng)
	}
}

// event seeds the stream for the event of the given kind of call i; sub tells apart the
// events of one kind (an attempt, a timer's time).
func (l *clientLag) event(kind uint64, i int, sub uint64) {
	l.rng.Seed(mix(l.key^mix(kind<<56^sub)), mix(uint64(i)))
}

// answer is how late attempt k's answer, due at t, e after call i arrived, reaches the state
// machine.
func (l *clientLag) answer(t int64, k, i int, e int64) int64 {
	if !l.busyAt(t) {
		return 0
	}
	l.event(lagAnswer, i, uint64(k))
	if k > 0 && l.hedges != nil {
		return l.draw(l.hedges, i, e)
	}
	if l.answers != nil {
		return l.draw(l.answers, i, e)
	}
	return l.exp(l.busy)
}

// timer is how late a timer due at t, e after call i arrived, fires.
func (l *clientLag) timer(t int64, i int, e int64) int64 {
	if !l.busyAt(t) {
		return 0
	}
	l.event(lagTimer, i, uint64(e))
	if l.wakeups != nil {
		return l.draw(l.wakeups, i, e)
	}
	return l.exp(l.timers)
}

// draw draws from d for an event e after call i arrived (a Series draws where it was).
func (l *clientLag) draw(d Distribution, i int, e int64) int64 {
	if sr, ok := d.(Series); ok {
		return int64(min(max(sr.SampleAt(l.r, i, time.Duration(e)), 0), maxService))
	}
	return int64(min(max(d.Sample(l.r), 0), maxService))
}

// busyAt reports whether the client is busy at t.
func (l *clientLag) busyAt(t int64) bool { return l.every != 0 && t%l.every < l.on }

// exp draws from an exponential distribution of mean m ns (0: none).
func (l *clientLag) exp(m float64) int64 {
	if m == 0 {
		return 0
	}
	return int64(min(l.r.ExpFloat64()*m, float64(maxService)))
}

// send is how late call i, arriving at t, leaves its client.
func (l *clientLag) send(t int64, i int) int64 {
	if l.sends == nil || !l.busyAt(t) {
		return 0
	}
	l.event(lagSend, i, 0)
	return l.draw(l.sends, i, 0)
}

// answer is the event that hands attempt k of the call in slot si its answer once the busy
// client gets to it; gen packs k with the call's index, so a call that ended meanwhile (its
// slot perhaps serving another) drops it.
func answerGen(k int, call int) uint32 { return uint32(k)&31 | uint32(call)<<5 }

// deliver hands a late answer to its call, unless the call is over.
func (s *sim) deliver(si int32, gen uint32) {
	sl := s.slots[si]
	if sl.finished || answerGen(0, sl.idx)>>5 != gen>>5 {
		return
	}
	if k := int(gen & 31); s.reports && k < len(sl.late) {
		s.reportFrom, s.report = sl.late[k].from, sl.late[k].l
	}
	if k := int(gen & 31); k < len(sl.pending) {
		sl.pending[k] = 0 // the answer reaches the call: no longer pending
	}
	s.cur = si
	s.cl.done(s, si, int(gen&31))
	s.flush()
}

// Series is a client delay measured over a run, kept where it was measured: Samples[j] was
// measured at At[j] (ascending), on a clock on which the run's call i arrived at Arrivals[i]. A
// busy client's delays come in bursts (a garbage collection, a thread descheduled, another
// process's work), which independent draws from the same samples smooth away: an answer late
// in a burst, the timer due in it and the hedge it sends are all late together. As a
// ClientDelay's distribution, a Series draws for an event of call i, e after the call
// arrived, one of the Near samples measured nearest Arrivals[i]+e, at random (Near 0: 4); a
// call past the last of Arrivals arrives after it, the mean gap between them apart. Drawn
// without a call (Sample), it is Empirical over all its samples.
type Series struct {
	Arrivals []time.Duration
	At       []time.Duration
	Samples  []time.Duration
	Near     int
}

// seriesNear is a Series' Near when it is 0.
const seriesNear = 4

// Sample returns one of the samples, each with equal probability. It panics with a sim:
// message when there is none.
func (d Series) Sample(r *rand.Rand) time.Duration {
	if len(d.Samples) == 0 {
		panic(errEmptySeries.Error())
	}
	return d.Samples[r.IntN(len(d.Samples))]
}

// SampleAt returns, for an event of call i, e after it arrived, one of the Near samples
// measured nearest that moment, each with equal probability. It panics with a sim: message
// when there is none.
func (d Series) SampleAt(r *rand.Rand, i int, e time.Duration) time.Duration {
	if len(d.Samples) == 0 {
		panic(errEmptySeries.Error())
	}
	near := d.Near
	if near <= 0 {
		near = seriesNear
	}
	near = min(near, len(d.Samples))
	j, _ := slices.BinarySearch(d.At, d.arrival(i)+e)
	lo := min(max(j-near/2, 0), len(d.Samples)-near)
	return d.Samples[lo+r.IntN(near)]
}

// arrival is when call i arrived, on the samples' clock.
func (d Series) arrival(i int) time.Duration {
	n := len(d.Arrivals)
	switch {
	case i < n:
		return d.Arrivals[max(i, 0)]
	case n == 1:
		return d.Arrivals[0]
	}
	gap := (d.Arrivals[n-1] - d.Arrivals[0]) / time.Duration(n-1)
	return d.Arrivals[n-1] + time.Duration(i-n+1)*gap
}

// Mean is the mean of the samples.
func (d Series) Mean() time.Duration { return Empirical{Samples: d.Samples}.Mean() }

func (d Series) String() string { return fmt.Sprintf("series(%d samples)", len(d.Samples)) }

func (d Series) check() error {
	if len(d.Samples) == 0 || len(d.At) != len(d.Samples) || len(d.Arrivals) == 0 || d.Near < 0 {
		return fmt.Errorf("sim: Series needs as many moments as samples, at least one, arrivals, and Near >= 0; got %d, %d, %d, %d",
			len(d.At), len(d.Samples), len(d.Arrivals), d.Near)
	}
	if !slices.IsSorted(d.At) {
		return errors.New("sim: Series.At must be ascending")
	}
	for i, s := range d.Samples {
		if s < 0 {
			return fmt.Errorf("sim: Series.Samples[%d] must be >= 0, got %v", i, s)
		}
	}
	return nil
}
