package hedge

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge/replica"
)

// This file holds where each attempt went, as far as the state machine needs to know it: a
// replica in trouble of its own (one that has stopped answering, or loses most of its races,
// while the others answer) makes every call whose first attempt went to it cross its hedge
// threshold. That is the replica's trouble, not a backlog of the dependency: its crossing is
// not counted as evidence of a backlog. When the replica has answered nothing at all since the
// call's first attempt was sent, for several thresholds, while another replica answered, the
// attempt is lost: the call's hedge goes to another replica and the backlog gate does not hold
// it back (docs/design.md, "The gates"). A replica that still answers, slowly, gets no such
// pass: its calls will be answered, and a hedge would add load to a backlog.

// Route is where one attempt was sent: a replica of a [replica.Set]. The driver of a call
// gives the state machine one Route per attempt ([Call.AttemptRoute]); the transport that
// picks the attempt's replica fills it in ([Route.To]), from any goroutine. Do and DoInline
// keep one in every attempt's context, filled with [Routed]. The zero Route says nothing.
type Route struct {
	set atomic.Pointer[replica.Set]
	i   atomic.Int32
	// ver is odd while To writes set and i: a reader takes the pair only as one To left it. A
	// transport may route one attempt twice (hedgegrpc's picker, asked again after the pool
	// was rebuilt), and the new Set's index read with the old Set can be out of its range.
	ver atomic.Uint32
}

// To records that the attempt went to replica i of set.
func (r *Route) To(set *replica.Set, i int) {
	v := r.ver.Load()
	for v&1 != 0 || !r.ver.CompareAndSwap(v, v+1) {
		v = r.ver.Load()
	}
	r.i.Store(int32(i))
	r.set.Store(set)
	r.ver.Store(v + 2)
}

// troubled reports whether the attempt went to a replica whose trouble is its own at now: one
// in trouble (replica.Set.Troubled) or one outlier detection has since ejected.
func (r *Route) troubled(now time.Time) bool {
	set, i, ok := r.replica()
	return ok && (set.Ejected(now, i) || set.Troubled(now, i))
}

// Routed records that ctx's attempt went to replica i of set: a transport that picks replicas
// (hedgehttp, hedgegrpc) calls it as it routes the attempt, with the context Do passed to the
// attempt function or one derived from it. Outside an attempt it does nothing. It never
// blocks and allocates nothing.
func Routed(ctx context.Context, set *replica.Set, i int) {
	if a, ok := ctx.Value(attemptKey{}).(*attemptCtx); ok {
		a.routeTo(set, i)
	}
}

// AttemptRoute gives the state machine attempt k's Route, which the transport fills in when it
// picks the attempt's replica. r must stay valid until the call is over. The simulator's
// driver calls it when it starts attempt k; Do and DoInline do it themselves.
func (c *Call) AttemptRoute(k int, r *Route) {
	if k >= 0 && k < len(c.attempts) {
		c.attempts[k].route = r
	}
}

// firstTroubled reports whether the attempt a hedge would copy (the oldest one running that
// is not itself a hedge) went to a replica whose trouble is its own.
func (c *Call) firstTroubled(now time.Time) bool {
	_, troubled := c.firstOnTroubled(now)
	return troubled
}

// firstOnTroubled reports whether the attempt a hedge would copy went to a replica whose
// trouble is its own, and whether its server has said it started serving it.
func (c *Call) firstOnTroubled(now time.Time) (inService, troubled bool) {
	for k := range c.attempts {
		if a := &c.attempts[k]; a.result == Running && !a.hedge {
			troubled = a.route != nil && a.route.troubled(now)
			return troubled && a.inService, troubled
		}
	}
	return false, false
}

// silentSince reports whether the attempt went to a replica that has answered nothing since
// since, while another has.
func (r *Route) silentSince(now, since time.Time) bool {
	set, i, ok := r.replica()
	return ok && set.SilentSince(now, since, i)
}

// firstSilent returns the start of the attempt a hedge would copy (the oldest one running that
// is not itself a hedge) when it went to a replica that has answered nothing since the attempt
// was sent, while another replica has; ok is false otherwise.
func (c *Call) firstSilent(now time.Time) (start time.Time, ok bool) {
	for k := range c.attempts {
		if a := &c.attempts[k]; a.result == Running && !a.hedge {
			if a.route != nil && a.route.silentSince(now, a.start) {
				return a.start, true
			}
			return time.Time{}, false
		}
	}
	return time.Time{}, false
}

// firstReported reports whether the attempt a hedge would copy went to a replica whose load
// report still counts at now (see [Policy.ReportLoad]): a replica that still reports is
// answering, however slowly, and its queue is in the reports the backlog gate reads.
func (c *Call) firstReported(now time.Time) bool {
	for k := range c.attempts {
		if a := &c.attempts[k]; a.result == Running && !a.hedge {
			_, i, ok := a.route.replica()
			return ok && c.p.loads.reported(now, i)
		}
	}
	return false
}

// lostUnreported reports whether the call's first attempt is lost (see Call.lost) and its
// replica has stopped reporting its load as well.
func (c *Call) lostUnreported(now time.Time) bool {
	return c.lost(now) && !c.firstReported(now)
}

// replica returns the replica the attempt went to, once the transport has said; a nil Route
// says nothing.
func (r *Route) replica() (set *replica.Set, i int, ok bool) {
	if r == nil {
		return nil, 0, false
	}
	for {
		v := r.ver.Load()
		if v&1 != 0 {
			runtime.Gosched() // To is writing: two stores away from done
			continue
		}
		set, i = r.set.Load(), int(r.i.Load())
		if r.ver.Load() == v {
			return set, i, set != nil
		}
	}
}
