package hedgehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// errBodyTaken fails a first attempt that starts after its RoundTrip has returned: the
// caller's body is closed, and must not be sent.
var errBodyTaken = errors.New("hedgehttp: request body already closed: the call ended before the attempt started")

// errCallOver fails an attempt that starts on a goroutine of its own after its RoundTrip has
// returned: the caller may be changing its request by then, and nothing would read the answer.
var errCallOver = errors.New("hedgehttp: the call ended before the attempt started")

// call is one RoundTrip: what every attempt of it shares. It is also the context RoundTrip
// runs the call under (the caller's, with the call's repeatability), so that every attempt
// finds its call in its context (see runAttempt), and the attempt function passed to the core
// is one function, not a closure built per call.
//
// What only some calls need (a buffered body, replicas) is behind pointers, so that the
// allocation every call makes stays small.
type call struct {
	context.Context
	t   *Transport
	h   *host
	req *http.Request
	buf *bufferedBody // what bufferBody read of the request body; nil: nothing
	rep *replicaCall  // the call's replicas; nil: attempts go to the request's own URL

	// bodyOwned is set by whoever takes the caller's body (when it was not buffered): the
	// first attempt, to send it, or RoundTrip, to close it when no attempt took it. Exactly
	// one of them does, so the body is closed once, by one goroutine.
	bodyOwned atomic.Bool
	firstDone bool // see first; beside bodyOwned, where the call has room for it
	signals   bool // the host's trigger reads start signals (hostState.signals)

	// first is the first attempt's request when it is sent on the caller's context over
	// HTTP/1 (see attempt), for cancelFirst; firstDone, under firstMu, says its round trip has
	// returned, after which cancelFirst must not touch the request: the caller may send it
	// again once RoundTrip is over, and a late cancel would reach that round trip.
	first   *http.Request
	firstMu sync.Mutex

	// won is the winner's response body as RoundTrip returns it, when the attempt did not
	// wrap it already: in the call's allocation, which lives as long as the winner anyway.
	won body

	// over is set as RoundTrip returns; copying counts the attempts on goroutines of their
	// own reading the caller's request (see attempt). RoundTrip waits for those, and an
	// attempt that finds over set reads nothing of it: once RoundTrip is over the caller may
	// change or send the request again.
	over    atomic.Bool
	copying atomic.Int32
}

// bufferedBody is what bufferBody read of a request body.
type bufferedBody struct {
	body   []byte // the whole body, or nil
	prefix []byte // read ahead of a body too large to buffer: sent before the rest
}

// replicaCall is a call's replicas, for a host that has them; it comes in the call's
// allocation (see withReplicas).
type replicaCall struct {
	pool    *replica.Pool // where attempts go
	mu      sync.Mutex    // guards used
	used    []int         // the replicas the call's attempts went to
	usedBuf [4]int
}

// withReplicas is a call and its replicas in one allocation.
type withReplicas struct {
	call
	rep replicaCall
}

// body is the request body read into memory, or nil.
func (c *call) body() []byte {
	if c.buf == nil {
		return nil
	}
	return c.buf.body
}

// prefix is what was read ahead of a body too large to buffer, or nil.
func (c *call) prefix() []byte {
	if c.buf == nil {
		return nil
	}
	return c.buf.prefix
}

// pool is where the call's attempts go, or nil: the request's own URL.
func (c *call) pool() *replica.Pool {
	if c.rep == nil {
		return nil
	}
	return c.rep.pool
}

// callKey finds the call in the context of its attempts.
type callKey struct{}

// Value answers callKey with the call; anything else is the caller's.
func (c *call) Value(key any) any {
	if _, ok := key.(callKey); ok { // a comparison of types, where == would compare values too
		return c
	}
	return c.Context.Value(key)
}

// runAttempt is every call's attempt function: it runs the attempt of the call under whose
// context (see call) the core started it.
func runAttempt(ctx context.Context) (*http.Response, error) {
	return ctx.Value(callKey{}).(*call).attempt(ctx)
}

// bufferBody reads the request body into memory, up to the Transport's MaxBodyBuffer, so
// that it can be sent more than once. When the body is larger it leaves c.body() nil (the call
// is then sent once) and keeps what it read in c.prefix(), to be sent ahead of the rest: a
// request is never sent with a half-consumed body.
func (c *call) bufferBody() error {
	req, limit := c.req, c.t.maxBuffer
	if limit < 0 || req.ContentLength > limit {
		return nil
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		req.Body.Close() // as a plain RoundTrip would, sending nothing
		return err
	}
	var buf bytes.Buffer
	if req.ContentLength > 0 {
		// Trust the declared length only so far: a request that declares 200 MiB and
		// sends 4 bytes must not cost 200 MiB. Past this, the buffer grows as bytes arrive.
		buf.Grow(int(min(req.ContentLength, 64<<10)))
	}
	read := func() error {
		_, err := buf.ReadFrom(io.LimitReader(req.Body, limit+1))
		return err
	}
	var err error
	if ctx.Done() == nil {
		err = read()
	} else {
		// A body that stalls (a pipe, a slow client's upload a proxy forwards) must not
		// hold RoundTrip past its caller's context, as the read would on the caller's
		// goroutine: it runs on one of its own, and a caller that gives up leaves it the
		// body to close once the read returns (closing it now could wait for the read, as
		// a server's request body does).
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			go func() {
				<-done
				req.Body.Close()
			}()
			return ctx.Err()
		}
	}
	if err != nil {
		req.Body.Close()
		return err
	}
	if int64(buf.Len()) > limit {
		c.buf = &bufferedBody{prefix: buf.Bytes()}
		return nil
	}
	req.Body.Close()
	c.buf = &bufferedBody{body: buf.Bytes()}
	if c.buf.body == nil {
		c.buf.body = []byte{}
	}
	return nil
}

// getBody replays the buffered body.
func (c *call) getBody() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(c.body())), nil
}

// prefixed sends the bytes read ahead of a large body, then the rest of it.
type prefixed struct {
	io.Reader
	io.Closer
}

// attempt sends one attempt: a clone of the caller's request on the attempt's context, with
// its own copy of the body, marked with its index when it is not the first, and sent to its
// own replica.
func (c *call) attempt(ctx context.Context) (*http.Response, error) {
	info, _ := hedge.AttemptFrom(ctx)
	// The request runs on a context of its own that follows the caller's (but for the first
	// attempt on the caller's goroutine: below). The core cancels the attempt's context the
	// moment the attempt loses: until the response has arrived, that stops the request at
	// once; once it has, the loser is drained instead (see Transport.discard), so that its
	// connection goes back to the pool rather than being torn down.
	inline := info.Index == 0 && c.t.inline
	var (
		r       *http.Request
		ar      *attemptRequest // nil: the request runs on the attempt's own context
		trailer http.Header     // the caller's, shared (see ownTrailer)
	)
	var stopCancel func() bool // unhooks cancelFirst from the attempt's context
	switch proto := c.h.proto.Load(); {
	case inline && !c.signals && proto == 1 && c.t.h1 != nil && plainScheme(c.req.URL.Scheme) && !c.viaNamedTLS():
		// The first attempt on the caller's goroutine, to a host known to speak HTTP/1 over
		// Next's *http.Transport, listening for no start signal: the request goes out on the
		// caller's own context, as a plain RoundTrip would send it, and a loser is cancelled
		// through the Transport, which keeps a cancel function for every request it has in
		// flight whatever its context (CancelRequest; HTTP/1 only). The attempt's context is
		// then nothing net/http links a context to, and the request is not copied when
		// nothing of it changes: no clone, no cancel chain, no channel.
		// TestHedgeBeatsSlowPrimary fails if the Transport stops cancelling this way.
		r = c.req
		if c.rep != nil || c.buf != nil || c.req.Trailer != nil || c.t.sentBefore(c.req) {
			r = c.clone(c.req.Context(), true) // a URL or a body of its own, or a request sent before: a copy
		}
		c.first = r
		stopCancel = afterFunc(ctx, c.cancelFirst)
	case inline && !c.signals && proto != 0:
		// The first attempt on the caller's goroutine, which listens for no start signal
		// and has the host's protocol to learn no more: it needs nothing of a context of its
		// own (a loser is cancelled at once, without the grace, whether its response has
		// arrived or not), so it runs on the attempt's, which the core cancels when it loses
		// and, when it wins, once the caller is done with its body. What that saves (a
		// context, its cancel chain and its link to the attempt's) is most of what an
		// attempt costs on top of the round trip.
		r = c.clone(ctx, true)
	default:
		if !inline {
			// On a goroutine of its own, the attempt may start after RoundTrip has returned
			// (a hedge due just as the winner answered): it reads the caller's request only
			// before then, and takes a URL of its own, which the caller may change after.
			c.copying.Add(1)
			if c.over.Load() {
				c.copying.Add(-1)
				return nil, errCallOver
			}
		}
		var reqCtx context.Context
		reqCtx, ar = newAttemptRequest(c.req.Context(), ctx, c.h, c.signals, inline)
		r = c.clone(reqCtx, inline && !c.signals)
		if !inline {
			u := *r.URL
			r.URL = &u
			getBody, err := c.takeBody(r, info.Index)
			trailer = c.ownTrailer(info.Index) // the caller's request is read only while copying
			c.copying.Add(-1)
			if err == nil && getBody != nil {
				// GetBody is the caller's code, which may take its time (a file reopened, a
				// body rebuilt from a source that stalls): it runs once the request is copied,
				// as RoundTrip waits for the copies, and a winner's answer or the caller's
				// cancellation must not wait for a hedge's body. A body got once the call is
				// over is not sent.
				if r.Body, err = getBody(); err == nil && c.over.Load() {
					if r.Body != nil {
						r.Body.Close()
					}
					err = errCallOver
				}
			}
			if err != nil {
				ar.end()
				return nil, err
			}
		}
	}
	if inline {
		if err := c.setBody(r, info.Index); err != nil {
			ar.end()
			return nil, err
		}
		trailer = c.ownTrailer(info.Index)
	}
	if trailer != nil {
		r.Trailer = trailer
	}
	if info.Hedge || info.Retry || c.signals {
		mark(r, info, c.signals)
	}
	next, apart, ri, again := c.t.next, c.t.apart, -1, info.Hedge
	// settled is set just before the attempt's end is told to its replica (before, so that a
	// panic in Done itself, in Config.Replica.OnEjection, does not end the attempt twice).
	settled := false
	if pool := c.pool(); pool != nil {
		if hook := testHookPick.Load(); hook != nil {
			(*hook)(c.t, ctx, r)
		}
		ri, again = c.pick()
		defer func() {
			if !settled {
				// Next panicked (or a body it returned did, read for a failure): the attempt
				// is over all the same, and must not stay outstanding on its replica for
				// good. A replica back from an ejection would then have an attempt out for
				// ever, rank as ejected (Set.tier), and never get a first attempt again. The
				// panic goes on to the core, which hands it to the caller.
				c.done(ri, replica.Ignored)
			}
		}()
		hedge.Routed(ctx, pool.Set(), ri) // the state machine tells this replica's trouble from the host's
		if r.Host == "" {
			// A request built without NewRequest has no Host: net/http would then send the
			// URL's host, which is now the replica's address. The Host header stays the
			// request's, as Config.Replicas says (a virtual host answers by the name).
			r.Host = r.URL.Host
		}
		u := *r.URL // the caller's URL is shared until here
		u.Host = pool.Addr(ri)
		r.URL = &u
		if u.Scheme == "https" {
			if n, ok := c.t.replicaTLS(r.Host, u.Host); ok {
				// The replica's certificate is checked against the dependency's name.
				next = n.next
				if n.apart != nil {
					apart = n.apart
				}
			}
		}
	}
	if again && info.Hedge && apart != nil && c.multiplexed(r) {
		// A hedge to its primary's host, which multiplexes both on one connection: keep it
		// off the primary's connections.
		next = apart
	}
	resp, err := next.RoundTrip(r)
	var se *StatusError
	if err == nil && resp != nil {
		c.noteLoad(ri, resp) // the server's load report (load.go)
		if v := min(max(int32(resp.ProtoMajor), 1), 2); c.h.proto.Load() != v {
			c.h.proto.Store(v) // not HTTP/2 (or a Next that does not say) counts as HTTP/1
		}
		// A failing answer's body is read into memory before the attempt counts as
		// answered: while a loss still cancels the request, a server that stalls in the
		// body of a 503 cannot hold a call a hedge has won, or the loser's connection.
		se = c.t.failure(resp)
	}
	if ar != nil {
		ar.answered.Store(true)
	}
	if stopCancel != nil && !stopCancel() {
		// Answered, but the attempt was cancelled meanwhile and cancelFirst is on its way:
		// wait for it, or tell it not to, before the caller can reuse the request. The loser's
		// body is closed at once (its connection with it): on the caller's context, nothing
		// could bound a drain of it.
		c.firstMu.Lock()
		c.firstDone = true
		c.firstMu.Unlock()
		if err == nil && resp != nil && resp.Body != nil && se == nil {
			resp.Body.Close()
			resp.Body = http.NoBody
		}
	}
	if err == nil && resp == nil {
		err = fmt.Errorf("hedgehttp: Next (%T) returned a nil *Response with a nil error", c.t.next)
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		ar.end()
		settled = true
		return nil, c.failed(ctx, ri, err)
	}
	if se != nil {
		ar.end() // the failing body is in memory: the request is over
		if ri >= 0 {
			res := replica.Ignored
			if code := resp.StatusCode; code >= 500 && code != http.StatusNotImplemented {
				res = replica.Failure
			}
			settled = true
			se.outcome.Ejected = c.done(ri, res)
		}
		return nil, se
	}
	if ri >= 0 {
		settled = true
		c.done(ri, replica.Success)
	}
	if ar == nil {
		return resp, nil // RoundTrip wraps the winner's body to release the attempt's context
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		ar.end()
		return resp, nil
	}
	resp.Body = &attemptBody{ReadCloser: resp.Body, ar: ar}
	return resp, nil
}

// cancelFirst cancels the first attempt's request, sent on the caller's context over HTTP/1,
// through Next's *http.Transport: the core calls it when the attempt loses (or the call ends
// early) while its request is in flight.
func (c *call) cancelFirst() {
	c.firstMu.Lock()
	if !c.firstDone {
		//lint:ignore SA1019 HTTP/1's per-request cancel, which net/http keeps for every request anyway
		c.t.h1.CancelRequest(c.first)
	}
	c.firstMu.Unlock()
}

// sentOwnSlots is how many requests sent as they are (see Transport.sentBefore) a Transport
// remembers: enough that callers on other goroutines rarely push out a request about to be
// sent again.
const sentOwnSlots = 64

// sentBefore reports whether req may have been sent as it is, by a first attempt on the
// caller's own request, before; it remembers that it is being sent now. net/http keys the
// cancel function that CancelRequest calls by the *Request, and the round trip before, once
// its body is read, removes the key on its own goroutine: when the caller sends the same
// request again at once, that removal may come after the new round trip set the key, and a
// loss could no longer cancel it. A request sent again goes out as a copy, under a key of its
// own. Only addresses are kept (nothing is held alive); a new request at an old one's address
// is copied for nothing, and one pushed out of its slot by another is not caught.
func (t *Transport) sentBefore(req *http.Request) bool {
	a := uintptr(unsafe.Pointer(req))
	slot := &t.sentOwn[(a>>4)%sentOwnSlots]
	return slot.Swap(a) == a
}

// viaNamedTLS reports whether the call's attempts may go through a clone of Next of
// Transport.replicaTLS: HTTPS to replicas. Such a first attempt does not run on the caller's
// context, whose loser is cancelled through Next itself (CancelRequest), which the clone's
// requests are not in.
func (c *call) viaNamedTLS() bool {
	return c.rep != nil && c.t.nameReplicas && c.req.URL.Scheme == "https"
}

// plainScheme reports whether a request with this scheme goes over net/http's own
// connections (not a RoundTripper registered for the scheme), where CancelRequest reaches it.
func plainScheme(s string) bool { return s == "http" || s == "https" }

// ownTrailer is the caller's trailer map for attempt index when that attempt sends the
// caller's own body, nil otherwise: such an attempt shares the map, since the caller may fill
// it in while the body is read (as net/http allows), after the copy.
func (c *call) ownTrailer(index int) http.Header {
	if index == 0 && c.req.Trailer != nil && c.body() == nil {
		return c.req.Trailer
	}
	return nil
}

// setBody gives attempt index's request r its body: a copy of the buffered body, the caller's
// own for the first attempt (behind what buffering read of it), or a fresh one from GetBody.
func (c *call) setBody(r *http.Request, index int) error {
	getBody, err := c.takeBody(r, index)
	if err == nil && getBody != nil {
		r.Body, err = getBody()
	}
	return err
}

// takeBody is setBody but for a body from the caller's GetBody, which it returns to be called
// rather than calling it: reading only the request, it is quick.
func (c *call) takeBody(r *http.Request, index int) (getBody func() (io.ReadCloser, error), err error) {
	switch {
	case c.body() != nil:
		r.Body, _ = c.getBody()
		r.GetBody = c.getBody
	case index == 0:
		if c.req.Body != nil && c.req.Body != http.NoBody && !c.bodyOwned.CompareAndSwap(false, true) {
			// RoundTrip has already returned and closed the caller's body: this attempt
			// started after the call was over.
			return nil, errBodyTaken
		}
		if prefix := c.prefix(); prefix != nil {
			r.Body = prefixed{io.MultiReader(bytes.NewReader(prefix), c.req.Body), c.req.Body}
		}
	case c.req.GetBody != nil && c.req.Body != nil && c.req.Body != http.NoBody:
		return c.req.GetBody, nil
	}
	return nil, nil
}

// mark sets the headers of an attempt's request (whose header map clone made): the
// attempt's index on a copy (a hedge or a retry; a primary resent because it never left is
// not a copy), and the request for a start signal when the trigger reads them. It is kept out
// of line, like newAttemptRequest, so that its frame does not sit under the whole round trip.
//
//go:noinline
func mark(r *http.Request, info hedge.AttemptInfo, signals bool) {
	if signals && !expectsContinue(r.Header) {
		r.Header[StartSignalHeader] = startSignalValue
	}
	if info.Hedge || info.Retry {
		r.Header[AttemptHeader] = []string{strconv.Itoa(info.Index)}
	}
}

// expectsContinue reports whether a request waits for 100 Continue before sending its body:
// it must not ask for a start signal (see StartSignalHeader).
func expectsContinue(h http.Header) bool {
	v := h["Expect"]
	return len(v) > 0 && strings.EqualFold(v[0], "100-continue")
}

// clone is the attempt's copy of the caller's request, on ctx: what http.Request.Clone
// makes, for less. The header map is new, with room for the headers an attempt adds (so
// adding them does not grow it); the URL is shared (an attempt sent to a replica gets its
// own copy then); the rest is shared, as nothing on the way to the wire changes it.
//
// With shareHeader (the first attempt, on the caller's goroutine, when it adds no header), the
// header is the caller's own, as with a plain RoundTrip: this attempt returns before RoundTrip
// does, so no request of the call reads the header after the caller has its answer.
func (c *call) clone(ctx context.Context, shareHeader bool) *http.Request {
	if shareHeader && c.req.Trailer == nil && c.req.Header != nil {
		return c.req.WithContext(ctx)
	}
	if c.req.Trailer != nil {
		r := c.req.Clone(ctx) // trailers are written while the body is sent: copy everything
		if r.Header == nil {
			r.Header = make(http.Header, 2)
		}
		return r
	}
	r := c.req.WithContext(ctx)
	r.Header = cloneHeader(c.req.Header, 2)
	return r
}

// cloneHeader copies h into a map with room for extra more keys, its values in one slice
// (as http.Header.Clone does).
func cloneHeader(h http.Header, extra int) http.Header {
	nv := 0
	for _, vv := range h {
		nv += len(vv)
	}
	var sv []string
	if nv > 0 {
		sv = make([]string, nv)
	}
	h2 := make(http.Header, len(h)+extra)
	for k, vv := range h {
		if vv == nil {
			h2[k] = nil
			continue
		}
		n := copy(sv, vv)
		h2[k] = sv[:n:n]
		sv = sv[n:]
	}
	return h2
}

// multiplexed reports whether r's host may carry r on the same connection as its primary:
// it speaks HTTP/2, or its protocol is not known yet (the primary's connection may still be
// on its way) and r goes over TLS, where HTTP/2 is negotiated.
func (c *call) multiplexed(r *http.Request) bool {
	switch c.h.proto.Load() {
	case 2:
		return true
	case 0:
		return r.URL.Scheme == "https"
	}
	return false
}

// testHookPick, when set, runs as an attempt is about to pick its replica, with its
// Transport, its context and its request: a test can hold an attempt there, so that the
// attempts of a call pick in the order it asserts on. Atomic: attempts of other tests' calls
// may still read it as a test sets it.
var testHookPick atomic.Pointer[func(t *Transport, ctx context.Context, r *http.Request)]

// pick chooses the replica of an attempt, away from those the call has used while a healthy
// one is left, and reports whether the call had used it already.
func (c *call) pick() (i int, again bool) {
	now := time.Now()
	rc := c.rep
	rc.mu.Lock()
	defer rc.mu.Unlock()
	i, _ = rc.pool.Pick(now, rc.used) // by group and weight, for a pool with groups
	for _, u := range rc.used {
		again = again || u == i
	}
	rc.used = append(rc.used, i)
	return i, again
}

// done ends the attempt on replica i with its result, and reports whether the replica is
// ejected: then the attempt's failure is that replica's, and the core keeps it off the
// breaker.
func (c *call) done(i int, r replica.Result) bool {
	return c.rep.pool.Set().Done(time.Now(), i, r)
}

// failed handles an attempt's transport error: it tells outlier detection what it says about
// the replica (ri, or -1 without replicas), and marks for the core an error from a request
// that never left this process, and one from an ejected replica.
func (c *call) failed(ctx context.Context, ri int, err error) error {
	cancelled := ctx.Err() != nil || c.req.Context().Err() != nil
	unsent := !cancelled && notSent(err)
	var ejected bool
	if ri >= 0 {
		res := replica.Failure
		switch {
		case cancelled && hedge.LostSlow(ctx):
			res = replica.Slow // a copy elsewhere answered while this one ran past the threshold
		case cancelled && errors.Is(c.req.Context().Err(), context.DeadlineExceeded):
			// The caller's deadline cut it: the replica had the whole of the caller's
			// patience and did not answer (one that stopped answering while no hedge rescues
			// its calls shows it this way and no other).
			res = replica.Slow
		case cancelled:
			res = replica.Ignored
		case unsent:
			res = replica.Unreachable
		}
		ejected = c.done(ri, res)
	}
	// A request whose body cannot be sent again is not resent, whatever happened; nor is
	// one that timed out (a dial or DNS timeout) when there is no other replica to try: the
	// same host would make the caller wait as long again.
	unsent = unsent && (c.body() != nil || c.prefix() == nil && (c.req.Body == nil || c.req.Body == http.NoBody || c.req.GetBody != nil))
	var ne net.Error
	if pool := c.pool(); unsent && (pool == nil || pool.Len() < 2) && errors.As(err, &ne) && ne.Timeout() {
		unsent = false
	}
	if unsent || ejected {
		return &attemptError{err: err, unsent: unsent, ejected: ejected}
	}
	return err
}

// notSent reports whether err says the request never left this process: no connection could
// be made (refused, unreachable, a DNS failure, a dial timeout) or the TLS handshake failed,
// all before a byte of the request was written. (A connection that breaks before the request
// was written is retried by net/http itself when the request can be replayed.)
func notSent(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
		rh  tls.RecordHeaderError
		cv  *tls.CertificateVerificationError
		al  tls.AlertError
	)
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns) ||
		errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &al)
}

// attemptError is a transport error the core must know more about: the request never
// reached the dependency (resend it at once, elsewhere), or it failed at a replica that
// outlier detection has ejected (keep it off the breaker). [Classify] reads it.
type attemptError struct {
	err             error
	unsent, ejected bool
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// startSignalValue is the value of StartSignalHeader on every attempt. The slice is shared:
// nothing on the way to the wire changes a header value in place.
var startSignalValue = []string{"1"}

// attemptRequest ties an attempt's request context to the attempt: while no response has
// arrived, the attempt losing cancels the request; and a server's start signal reaches it.
//
// It is also the base of the request context: the caller's request context (whose
// cancellation the request follows, and whose deadline it keeps) with the attempt's values,
// so that code under the Transport (Next, a RoundTripper of the caller's) sees what code in
// any attempt of the core sees: hedge.AttemptFrom, hedge.LostSlow, hedge.StartedService.
type attemptRequest struct {
	context.Context                 // the caller's request context
	attempt         context.Context // the core's attempt context, whose values the request carries
	cancel          context.CancelFunc
	stop            func() bool
	answered        atomic.Bool
	// inline: the attempt runs on the caller's goroutine, which cannot return before the
	// request does; a loser is cancelled at once, without the grace (see loserGrace).
	inline bool
}

// attemptTrace is the trace on an attempt's request context, for attempts that need one: it
// passes the server's start signal on to the attempt, and learns the host's protocol until it
// is known.
type attemptTrace struct {
	attempt context.Context
	trace   httptrace.ClientTrace
}

// got1xx passes the server's start signal ([StartedStatus]) on to the attempt. It runs on
// the connection's reading goroutine and never blocks. Other 1xx responses are not ours.
func (t *attemptTrace) got1xx(code int, _ textproto.MIMEHeader) error {
	if code == StartedStatus {
		hedge.StartedService(t.attempt)
	}
	return nil
}

// newAttemptRequest returns the request context of the attempt whose context is attempt,
// to host h; with signals, one that also passes the server's start signal on to the attempt.
// inline says the attempt runs on the caller's goroutine.
// It is kept out of line: its frame would otherwise sit on the attempt goroutine's stack
// under every call the attempt makes, and a goroutine that outgrows its first stack pays
// for a copy on every attempt.
//
//go:noinline
func newAttemptRequest(parent, attempt context.Context, h *host, signals, inline bool) (context.Context, *attemptRequest) {
	ar := &attemptRequest{Context: parent, attempt: attempt, inline: inline}
	ctx, cancel := context.WithCancel(ar)
	ar.cancel = cancel
	ar.stop = afterFunc(attempt, ar.lost)
	learn := h.proto.Load() == 0
	if !signals && !learn {
		return ctx, ar
	}
	// The trace joins any the caller set on its request: WithClientTrace calls both.
	t := &attemptTrace{attempt: attempt}
	if signals {
		t.trace.Got1xxResponse = t.got1xx
	}
	if learn {
		t.trace.GotConn = h.gotConn // until the host's protocol is known
	}
	return httptrace.WithClientTrace(ctx, &t.trace), ar
}

// loserGrace is how long a losing attempt whose response has not arrived yet is given
// before its request is cancelled. HTTP/1.1 can abort a request in flight only by closing its
// connection, so cancelling a loser at once costs a connection (and a handshake for the next
// request) even when its response was about to arrive; given a moment, a near-tie's response
// arrives and is drained instead, and its connection is reused. It is short next to any hedge
// delay, so a loser that is really stuck is still cancelled promptly (and a server queue
// still sees it leave). A first attempt sent on the caller's goroutine gets no grace: the
// caller is inside its request, and a call a hedge won must return at the hedge's answer, not
// up to a grace later; that loser costs its connection on HTTP/1.1.
const loserGrace = 5 * time.Millisecond

// Value is the attempt's: the caller's values, and the attempt's own.
func (ar *attemptRequest) Value(key any) any { return ar.attempt.Value(key) }

func (ar *attemptRequest) lost() {
	switch {
	case ar.answered.Load():
	case ar.inline:
		ar.cancel()
	default:
		time.AfterFunc(loserGrace, ar.cancelUnanswered)
	}
}

func (ar *attemptRequest) cancelUnanswered() {
	if !ar.answered.Load() {
		ar.cancel()
	}
}

// end unhooks the request from the attempt and cancels it. A nil ar (a request on the
// attempt's own context) has nothing to end.
func (ar *attemptRequest) end() {
	if ar == nil {
		return
	}
	ar.stop()
	ar.cancel()
}

// afterFunc is context.AfterFunc, calling the attempt context's own AfterFunc directly when
// it has one (the core's does): the context package's general path costs allocations.
func afterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// attemptBody is a successful attempt's response body: reading it to the end or closing it
// ends the attempt's request context and unhooks it from the attempt's, before the core
// cancels that one.
//
// The winner's body is the one RoundTrip returns: hold, set then, also ends the winning
// attempt's context in the core.
type attemptBody struct {
	io.ReadCloser
	ar   *attemptRequest
	hold hedge.Hold // the call's, once this body is the winner's; the zero Hold before
}

func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		// Read to the end: the request is over (net/http has already taken the connection
		// back), so its context ends too, and nothing of the call stays attached to the
		// caller's context until that one ends.
		b.ar.end()
		b.hold.Release()
	}
	return n, err
}

func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	b.ar.end()
	b.hold.Release()
	return err
}

// drainTimeout bounds how long a losing response's body is read before its request is
// cancelled: draining is worth a connection, not a wait.
const drainTimeout = 250 * time.Millisecond

// drainAndClose reads what is left of a losing response's body, up to limit bytes and for
// at most drainTimeout, and closes it. A body read to its end lets net/http put the
// connection back in the pool; one closed early makes it close the connection.
func drainAndClose(rc io.ReadCloser, limit int64) {
	switch b := rc.(type) {
	case *attemptBody:
		t := time.AfterFunc(drainTimeout, b.ar.cancel)
		defer t.Stop()
	case *errorBody:
		// In memory: nothing to wait for.
	default:
		// A first attempt's own body, on the caller's context (HTTP/1, see call.attempt),
		// which lost as it answered: nothing cancels its request now, but closing the body
		// ends a read a stalled server holds.
		t := time.AfterFunc(drainTimeout, func() { rc.Close() })
		defer t.Stop()
	}
	io.CopyN(io.Discard, rc, limit)
	rc.Close()
}

// StatusError is the error an attempt reports when the server answered with a status that
// must not win the race: a 5xx other than 501, a 429 or a 408 (retriable: another attempt
// may do better), or any other 4xx or a 501 (permanent: the answer is final, and the call
// ends with it). [Classify] reads it.
//
// It carries the response, whose body has already been read into memory (up to
// Config.ErrorBodyLimit) so that the connection is free again: when every attempt fails,
// [Transport.RoundTrip] returns the last such response to its caller, with a nil error, as
// any http.RoundTripper would for a server that answered.
type StatusError struct {
	Response *http.Response
	// RetryAfter is the delay the server asked for in Retry-After (whole seconds or an HTTP
	// date), zero when it sent none or one that does not parse.
	RetryAfter time.Duration

	outcome hedge.Outcome
}

func (e *StatusError) Error() string {
	s := e.Response.Status
	if s == "" {
		s = strconv.Itoa(e.Response.StatusCode)
	}
	return "hedgehttp: server answered " + s
}

// Classify is the classifier a [Transport] gives its policies when Config.Policy.Classify
// is nil. A [StatusError] is Retriable (a 5xx but 501, a 408, a 429) or Permanent (another
// 4xx, a 501); a 429, and a 503 with Retry-After, are also overload signals that pause
// hedging for the policy's cool-down or Retry-After, whichever is longer, because a server
// that says it is overloaded must not be sent copies. Any other error is left to
// [hedge.Classify]: a transport error is Retriable, and Unsent when the request never left
// this process (a connection refused, a DNS or TLS handshake failure), so the call resends it
// at once to another replica. A failure at a replica that outlier detection has ejected
// (see Config.Replicas) is marked Ejected, so it does not count against the breaker.
func Classify(err error) hedge.Outcome {
	if err == nil {
		return hedge.Outcome{Class: hedge.Success}
	}
	var se *StatusError
	if errors.As(err, &se) {
		o := se.outcome
		o.Err = err
		return o
	}
	var ae *attemptError
	if errors.As(err, &ae) {
		o := hedge.Classify(ae.err)
		o.Err = err
		o.Unsent = o.Unsent || ae.unsent
		o.Ejected = ae.ejected
		if o.Unsent && o.Class == hedge.Permanent {
			o.Class = hedge.Retriable
		}
		return o
	}
	return hedge.Classify(err)
}

// failure returns a StatusError for a response that must not win, with its body read into
// memory, or nil for one that may.
func (t *Transport) failure(resp *http.Response) *StatusError {
	code := resp.StatusCode
	var o hedge.Outcome
	switch {
	case code < 400:
		return nil
	case code == http.StatusTooManyRequests:
		o.Class, o.Overload = hedge.Retriable, true
	case code == http.StatusRequestTimeout:
		o.Class = hedge.Retriable
	case code < 500, code == http.StatusNotImplemented:
		o.Class = hedge.Permanent
	default:
		o.Class = hedge.Retriable
	}
	se := &StatusError{Response: resp}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			se.RetryAfter = d
			o.Overload = true
			o.RetryAfter = d
		}
	}
	se.outcome = o
	resp.Body = t.readErrorBody(resp.Body)
	return se
}

// readErrorBody reads a failing response's body into memory, up to the limit, and closes
// it: the connection goes back to the pool now, and the body stays readable after the
// attempt's context is cancelled.
func (t *Transport) readErrorBody(rc io.ReadCloser) io.ReadCloser {
	if rc == nil || rc == http.NoBody {
		return http.NoBody
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(rc, t.errorLimit+1))
	rc.Close()
	b := &errorBody{}
	data := buf.Bytes()
	switch {
	case err != nil:
		b.err = err
	case int64(len(data)) > t.errorLimit:
		data, b.err = data[:t.errorLimit], ErrBodyTruncated
	default:
		b.err = io.EOF
	}
	b.r.Reset(data)
	return b
}

// errorBody is a failing response's body, read into memory; it ends with the error that
// ended the read (io.EOF when the body was read whole).
type errorBody struct {
	r   bytes.Reader
	err error
}

func (b *errorBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = b.err
	}
	return n, err
}

func (b *errorBody) Close() error { return nil }

// maxRetryAfter caps a Retry-After so that a hostile or broken server cannot pause hedging
// for years (nor overflow a Duration).
const maxRetryAfter = time.Hour

// parseRetryAfter reads a Retry-After value: whole seconds, or an HTTP date (measured from
// now). ok is false when v is empty or does not parse.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}
