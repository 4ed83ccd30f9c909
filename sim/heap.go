package sim

// evKind says what an event is.
type evKind uint8

const (
	evArrival  evKind = iota // the next call arrives
	evDone                   // worker idx finishes its request (gen: the worker's generation)
	evTimer                  // call slot idx's timer fires (gen: the slot's timer generation)
	evCancel                 // a cancellation of request idx reaches its server (gen: the request's generation)
	evWake                   // a replica's pause ends: dispatch what waited for it
	evRefused                // request idx's connection refusal reaches the client (gen: the request's generation)
	evDeadline               // call slot idx's caller gives up (gen: the call's index)
	evAnswer                 // a busy client gets to an answer for call slot idx (gen: see answerGen)
	evSend                   // a busy client gets to sending call slot idx (gen: the call's index)
	evReport                 // client idx receives every replica's out-of-band load report
)

// event is one pending event. It is a small value: the heap stores events inline, so pushing
// and popping never allocates (beyond the slice growing to the run's peak).
type event struct {
	t    int64  // virtual time, ns since the run's epoch
	seq  uint64 // push order: equal times pop first-in first-out, so ties are deterministic
	idx  int32  // worker (evDone), call slot (evTimer, evDeadline) or request (evCancel, evRefused)
	gen  uint32 // generation the event was pushed for; a mismatch means the event is stale
	kind evKind
}

// eventHeap is a binary min-heap on (t, seq), written out by hand so no event is boxed in an
// interface as container/heap would do.
type eventHeap struct {
	a   []event
	seq uint64
}

func (h *eventHeap) reset() {
	h.a = h.a[:0]
	h.seq = 0
}

func (h *eventHeap) len() int { return len(h.a) }

func evLess(a, b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

func (h *eventHeap) push(e event) {
	e.seq = h.seq
	h.seq++
	h.a = append(h.a, e)
	a := h.a
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !evLess(&e, &a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

// pop removes and returns the earliest event. The heap must not be empty.
func (h *eventHeap) pop() event {
	a := h.a
	top := a[0]
	n := len(a) - 1
	last := a[n]
	h.a = a[:n]
	a = a[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && evLess(&a[r], &a[l]) {
			c = r
		}
		if !evLess(&a[c], &last) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = last
	return top
}

// ring is a FIFO of request indices in a power-of-two ring buffer that grows when full.
type ring struct {
	buf        []int32
	head, size int
}

func (q *ring) reset() { q.head, q.size = 0, 0 }

func (q *ring) push(v int32) {
	if q.size == len(q.buf) {
		n := 2 * len(q.buf)
		if n == 0 {
			n = 256
		}
		nb := make([]int32, n)
		m := copy(nb, q.buf[q.head:])
		copy(nb[m:], q.buf[:q.head])
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = v
	q.size++
}

// pop removes the oldest entry; ok is false when the ring is empty.
func (q *ring) pop() (v int32, ok bool) {
	if q.size == 0 {
		return 0, false
	}
	v = q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return v, true
}
