package sim

import (
	"fmt"
	"math/rand/v2"
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
}

func (d ClientDelay) zero() bool {
	return d.Every == 0 && d.For == 0 && d.Busy == 0 && d.Timers == 0 && d.Answers == nil && d.Sends == nil
}

func (d ClientDelay) check() error {
	if d.Every < 0 || d.For < 0 || d.For > d.Every || d.Busy < 0 || d.Timers < 0 || (d.Every == 0 && !d.zero()) {
		return fmt.Errorf("sim: ClientDelay needs 0 <= For <= Every, Every > 0, Busy and Timers >= 0; got %+v", d)
	}
	for _, dist := range []Distribution{d.Answers, d.Sends} {
		if dist == nil {
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

// clientLag is a ClientDelay compiled for a run: it draws each late event's delay from its
// own stream, which nothing else draws from.
type clientLag struct {
	every, on    int64
	busy, timers float64 // means, ns
	answers      Distribution
	sends        Distribution
	rng          rand.PCG
	r            *rand.Rand
}

func (l *clientLag) reset(d ClientDelay, seed uint64) {
	l.every, l.on = int64(d.Every), int64(d.For)
	l.busy, l.timers, l.answers, l.sends = float64(d.Busy), float64(d.Timers), d.Answers, d.Sends
	l.rng.Seed(streamKey(seed, streamBusy), mix(seed))
	if l.r == nil {
		l.r = rand.New(&l.rng)
	}
}

// delay is how late a client event due at t happens: an answer, or a timer's firing.
func (l *clientLag) delay(t int64, timer bool) int64 {
	if l.every == 0 || t%l.every >= l.on {
		return 0
	}
	if !timer && l.answers != nil {
		return int64(max(l.answers.Sample(l.r), 0))
	}
	m := l.busy
	if timer {
		m = l.timers
	}
	if m == 0 {
		return 0
	}
	return int64(l.r.ExpFloat64() * m)
}

// send is how late a call that arrives at t leaves its client.
func (l *clientLag) send(t int64) int64 {
	if l.sends == nil || l.every == 0 || t%l.every >= l.on {
		return 0
	}
	return int64(max(l.sends.Sample(l.r), 0))
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
	s.cur = si
	s.cl.done(s, si, int(gen&31))
	s.flush()
}
