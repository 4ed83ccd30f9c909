package replica

import "time"

// This file holds the per-replica evidence that tells one replica's trouble from the whole
// dependency's. A replica that has stopped answering (it swallows requests, it hangs, its
// queue is stuck) makes every call whose first attempt went to it cross its hedge threshold;
// to the hedging core's backlog gate, which counts the calls that cross, that looks like a
// dependency-wide slowdown, and it would stop exactly the hedges that rescue those calls. The
// difference is where the trouble is: concentrated on a few replicas while the others answer,
// it is theirs, and hedging away from them is right; spread over every replica, it is a
// backlog, and a hedge only adds load. The same test keeps outlier detection from ejecting a
// replica that is merely as busy as the rest.

// badScale is the fixed-point scale of replica.bad: 1<<16 is every recent result bad.
const badScale = 1 << 16

// badShift sets how fast replica.bad follows a change: each result moves it 1/8 of the way,
// so three bad results in a row from none take it past a third, and it forgets a run of
// trouble within a few dozen results.
const badShift = 3

// noteResult folds one result into the replica's recent share of bad results. A success that
// finds the share at zero (a healthy replica, the common case) costs one atomic load.
func (s *Set) noteResult(rep *replica, bad bool) {
	for {
		v := rep.bad.Load()
		if !bad && v == 0 {
			return
		}
		nv := v - v>>badShift
		if bad {
			nv += badScale >> badShift
		}
		if rep.bad.CompareAndSwap(v, nv) {
			return
		}
	}
}

// answered notes that the replica answered: its count of attempts picked since its last
// answer starts again. A replica that answers (the common case) with the count at zero costs
// one atomic load.
func (s *Set) answered(rep *replica) {
	if rep.unanswered.Load() != 0 {
		rep.unanswered.Store(0)
	}
}

// succeeded notes the time of the replica's latest success (SilentSince). A Failure is not
// counted: it may be the caller's deadline cutting an attempt the replica never answered.
func (s *Set) succeeded(rep *replica, now time.Time) {
	if t := s.ticks(now); t > rep.lastAnswer.Load() {
		rep.lastAnswer.Store(t)
	}
}

// troubleRatio: a replica's trouble is its own when its share of bad results is at least
// troubleRatio times the mean of the other replicas in service, or it has had at least
// silentPicks attempts since its last answer and troubleRatio times as many as any other
// replica in service (plus one).
const (
	troubleRatio = 4
	silentPicks  = 4
	// troubleBad is the least share of bad results that counts as trouble: two bad results in
	// a row from none.
	troubleBad = badScale / 5
)

// troubledAt reports whether replica i, in service at tick t, is in trouble of its own: most
// of its recent results were bad (Slow, Failure, Unreachable) while the other replicas in
// service mostly answered, or it has been sent several attempts since its last answer while
// every other replica answered more recently (it has stopped answering, and no result has
// said so yet). A replica behind a long queue still answers, late: a long queue alone is not
// trouble of its own, since hedging away from it moves its load onto the others. One replica
// has no others to compare with.
func (s *Set) troubledAt(i int, t int64) bool {
	n := len(s.reps)
	if n < 2 || s.inForce(s.reps[i].until.Load(), t) {
		return false
	}
	var others int
	var bad int64
	var quiet uint32 // the most attempts any other replica has had since its last answer
	for j := range n {
		if j == i || s.inForce(s.reps[j].until.Load(), t) {
			continue
		}
		others++
		bad += int64(s.reps[j].bad.Load())
		quiet = max(quiet, s.reps[j].unanswered.Load())
	}
	if others == 0 {
		return false
	}
	rep := &s.reps[i]
	if b := int64(rep.bad.Load()); b >= troubleBad && b*int64(others) >= troubleRatio*bad {
		return true
	}
	u := rep.unanswered.Load()
	return u >= silentPicks && u >= troubleRatio*quiet+1
}

// slowIsOwn reports whether replica i's run of Slow results, due for ejection at tick t, is
// trouble of its own rather than the fleet's: its recent results are mostly bad while the
// other replicas in service mostly answer (their mean share of bad results is under a
// quarter, and at most 1/troubleRatio of its). Called with s.mu held.
func (s *Set) slowIsOwn(i int, t int64) bool {
	var others int
	var bad int64
	for j := range s.reps {
		if j == i || s.inForce(s.reps[j].until.Load(), t) {
			continue
		}
		others++
		bad += int64(s.reps[j].bad.Load())
	}
	if others == 0 {
		return false // the last replica in service: ejecting it helps nobody
	}
	b := int64(s.reps[i].bad.Load())
	return 4*bad < badScale*int64(others) && b*int64(others) >= troubleRatio*bad
}

// Troubled reports whether replica i is in trouble of its own at now: most of its recent
// results were bad (it lost races past the hedge threshold, its attempts were cut by their
// callers' deadlines, it failed) while the other replicas mostly answered, or it has been
// silent for several attempts while the others answered. It is false for an ejected replica (it gets no
// attempts) and in a Set of one. The hedging core asks it of the replica a call's first
// attempt went to (hedge.Route): such a call crosses its threshold because of its replica,
// not because the dependency is backlogged, and its hedge goes elsewhere. It scans the
// replicas.
func (s *Set) Troubled(now time.Time, i int) bool {
	s.check(i)
	return s.troubledAt(i, s.ticks(now))
}

// SilentSince reports whether replica i has had no Success since since, while another replica
// in service has: an attempt sent to it at since or before is waiting on a replica that has
// stopped answering, not behind a queue that still moves. A replica that is only slow, or
// loaded, answers the attempts ahead of it now and then; one that swallows requests, or hangs,
// answers none, and the Failure results of attempts its callers' deadlines cut are no answers
// from it. It is false in a Set of one.
func (s *Set) SilentSince(now, since time.Time, i int) bool {
	s.check(i)
	if len(s.reps) < 2 {
		return false
	}
	t := s.ticks(since)
	if s.reps[i].lastAnswer.Load() >= t {
		return false
	}
	u := s.ticks(now)
	for j := range s.reps {
		if j != i && !s.inForce(s.reps[j].until.Load(), u) && s.reps[j].lastAnswer.Load() >= t {
			return true
		}
	}
	return false
}
