package hedgehttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// This file holds load streams, the out-of-band half of a [Queue]'s load reports: instead of
// (or beside) a report on every response ([LoadHeader]), each client opens one long response
// on every server it calls, on which the server writes its load at a fixed interval, whatever
// the call rate. A client that makes a thin slice of a fleet's calls hears from each server
// only every hundred milliseconds or more on its own responses; on a stream it hears every
// interval, from every server, also from those its calls have not reached lately. The server
// half is [Queue.LoadStream]; the client half is [Config.LoadReportInterval].

// LoadStreamPath is the path at which a [Transport] with [Config.LoadReportInterval] asks each
// server for its load stream (unless [Config.LoadStreamPath] names another), and where a
// server mounts [Queue.LoadStream].
const LoadStreamPath = "/.hedge/load"

// DefaultLoadStreamMinInterval is the shortest interval a [Queue.LoadStream] grants when it is
// given none: a client that asks for less (or for nothing) is sent a report this often. It is
// well inside [hedge.LoadMaxAge], so that a stream's latest report is always fresh where the
// policy looks. It is hedgegrpc's DefaultOOBMinInterval, for the same reasons.
const DefaultLoadStreamMinInterval = 50 * time.Millisecond

// ErrLoadStreamClosed is the error of a [LoadStream] whose Close was called: its streams end
// and it refuses new ones (503 with Retry-After).
var ErrLoadStreamClosed = errors.New("hedgehttp: load stream closed")

// ErrLoadStream is wrapped by the errors [Config.LoadStreamError] is told of that are a load
// stream's own (a status other than 200, a stall, a stream that ended), not Next's.
var ErrLoadStream = errors.New("hedgehttp: load stream failed")

// LoadStream is the handler of a [Queue]'s load stream. A GET, with an optional query
// parameter interval (a Go duration, "interval=20ms"), is answered 200 with a text/plain body
// that never ends by itself: one line per report, the queue's load in the syntax of
// [LoadHeader] (without a request's wait), the first at once and then one every interval
// (never more often than the handler's minimum, and never less often than two thirds of
// [hedge.LoadMaxAge] or that minimum: a report older than LoadMaxAge counts for nothing, so
// the next must come while the last still counts, and a write is how the
// handler learns that a client has gone where the request's context does not say so, as over
// HTTP/1.1 after a pipelined request). The stream ends when its client goes away or when
// Close is called. Other methods are answered 405, a request with a body or an interval that
// does not parse 400.
//
// Mount it beside the queue, so that a stream never holds a worker:
//
//	ls, err := q.LoadStream(0)
//	...
//	mux.Handle(hedgehttp.LoadStreamPath, ls)
//	mux.Handle("/", q)
//
// Behind the queue (a Queue that wraps the whole mux, the stream's route among the rest) works
// too at [LoadStreamPath]: a request for that path is admitted as any other, and the stream
// gives its worker back to the queue as it starts (another handler at that path keeps its
// worker, as any handler does). At another path, mount it beside the queue: there a stream
// would hold a worker for as long as its client keeps it open, and as many clients as workers
// would leave none for requests.
//
// A stream holds its request open for as long as its client keeps it: http.Server.Shutdown
// waits for open requests, so register Close with http.Server.RegisterOnShutdown. The
// handler clears the write deadline of each stream's connection (http.Server.WriteTimeout
// would otherwise end it). Safe for concurrent use.
type LoadStream struct {
	q        *Queue
	min      time.Duration
	writeMin time.Duration // loadStreamWriteMin; shorter in tests
	mu       sync.Mutex
	done     chan struct{} // closed by Close
	open     sync.WaitGroup
}

// LoadStream returns the handler of the queue's load stream, which never reports more often
// than every minInterval: 0 means [DefaultLoadStreamMinInterval]; negative is an error
// wrapping [ErrQueueConfig].
//
// A stream costs the server one line of about 20 bytes per client per interval, whatever the
// call rate, and nothing per response: where calls are many and small, it can replace the
// per-response report ([QueueConfig.NoLoadReport]), whose header costs a few per cent of a
// round trip that does nothing else.
func (q *Queue) LoadStream(minInterval time.Duration) (*LoadStream, error) {
	if minInterval < 0 {
		return nil, fmt.Errorf("%w: LoadStream's minInterval must be >= 0, got %v", ErrQueueConfig, minInterval)
	}
	if minInterval == 0 {
		minInterval = DefaultLoadStreamMinInterval
	}
	q.streams.Store(true) // a request for LoadStreamPath gets a worker the stream can give back (ServeHTTP)
	return &LoadStream{q: q, min: minInterval, writeMin: loadStreamWriteMin, done: make(chan struct{})}, nil
}

// longestLoadInterval is the longest interval a load stream grants: two thirds of
// hedge.LoadMaxAge, so that the next report arrives while the last still counts, whatever the
// network and the timers add.
const longestLoadInterval = hedge.LoadMaxAge * 2 / 3

// ServeHTTP streams the queue's load until the client goes away or Close is called.
func (s *LoadStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	endLease(s.q, r) // behind its queue: the worker goes back as the stream starts
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "hedgehttp: a load stream is read with GET", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > 0 {
		// net/http reads what is left of a body only up to a limit before it stops watching the
		// connection: a client that sent more could hang up unseen.
		http.Error(w, "hedgehttp: a load stream request carries no body", http.StatusBadRequest)
		return
	}
	interval := s.min
	if v := r.URL.Query().Get("interval"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("hedgehttp: load stream interval %q: want a duration such as 50ms", v), http.StatusBadRequest)
			return
		}
		interval = max(min(d, longestLoadInterval), s.min)
	}
	if !s.enter() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, ErrLoadStreamClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	defer s.open.Done()
	rc := http.NewResponseController(w)
	// Each line gets a write deadline of its own: the server's WriteTimeout would end the
	// stream, and no deadline at all would let a client that stops reading (its buffers, or
	// HTTP/2's flow-control window, full) hold this handler, and Close, for good. A client
	// takes its stream for stalled after loadStreamStallReports intervals anyway.
	writeTimeout := max(loadStreamStallReports*interval, s.writeMin)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(interval)
	defer t.Stop()
	line := make([]byte, 0, 64)
	for {
		line = append(append(line[:0], s.q.reportValue(s.q.core.Counts(0))...), '\n')
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not supported by every writer: none then
		if _, err := w.Write(line); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return // a writer that cannot flush cannot stream
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// enter counts a new stream in, unless Close was called.
func (s *LoadStream) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return false
	default:
	}
	s.open.Add(1)
	return true
}

// Close ends every open stream and refuses new ones, and returns once every stream's handler
// has returned. Register it with http.Server.RegisterOnShutdown. Calling it again does nothing.
func (s *LoadStream) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.open.Wait()
}

// The client half.

// How a Transport's load streams behave: a stream that ends or fails is opened again after
// loadStreamRetryMin, doubling to loadStreamRetryMax while it keeps failing; a server that
// answers the stream with 404, 405 or 501 (it has none) is asked again only after
// loadStreamAbsent. A stream on which no report has come for loadStreamStallReports
// intervals (or gaps between two reports, when the server grants a longer interval than
// asked; at least loadStreamStallMin) is taken for stalled and opened again; a stall after a
// report teaches the server's next stream that its gap may be that long (up to
// hedge.LoadMaxAge, beyond which a report says nothing anyway). A host that made no call for
// loadStreamIdle has its streams closed, until its next call.
const (
	loadStreamRetryMin     = 100 * time.Millisecond
	loadStreamRetryMax     = 10 * time.Second
	loadStreamAbsent       = time.Minute
	loadStreamStallReports = 10
	loadStreamStallMin     = time.Second
	loadStreamIdle         = time.Minute
	loadStreamMaxLine      = 1024
	// loadStreamWriteMin is the least time a server gives one line of a stream to be written
	// before it ends the stream (see LoadStream.ServeHTTP).
	loadStreamWriteMin = 10 * time.Second
)

// loadStreams is a Transport's load streams: one per server (replica address, or the request's
// own host when the host has no replicas) that the hosts which called lately send to. Hosts
// (keys) whose calls go to the same server share its stream: a host split by path, or by
// operation ([Config.PolicyFor]), opens no more streams than one host.
type loadStreams struct {
	t        *Transport
	interval time.Duration
	path     string
	idle     time.Duration                  // loadStreamIdle; shorter in tests
	stallMin time.Duration                  // loadStreamStallMin; shorter in tests
	prepare  func(*http.Request)            // Config.LoadStreamRequest
	failed   func(server string, err error) // Config.LoadStreamError

	mu      sync.Mutex
	closed  atomic.Bool // set under mu by close; read without it by follow's first look
	hosts   map[*host]*hostStreams
	servers map[serverKey]*serverStream
	wg      sync.WaitGroup // every stream's goroutine
}

// serverKey names a server's stream: the address it is opened on, and the scheme and Host
// header its hosts' requests carry (one address may serve several virtual hosts, each
// with a load of its own).
type serverKey struct {
	scheme, addr, hostHeader string
	replica                  bool // addr is a replica's: its certificate is checked against hostHeader (replicaTLS)
}

// serverStream is one server's stream and the hosts it reports to.
type serverStream struct {
	key  serverKey
	stop context.CancelFunc
	// hosts is who hears the stream's reports; written under loadStreams.mu (copied, never
	// changed in place), read by the stream's goroutine without it.
	hosts atomic.Pointer[[]*host]
}

// hostStreams is the servers one host hears from, by address.
type hostStreams struct {
	byAddr map[string]*serverStream
	idle   *time.Timer // stops the streams of a host that stopped calling
}

// newLoadStreams returns the load streams of cfg, nil when it asks for none.
func newLoadStreams(t *Transport, cfg Config) (*loadStreams, error) {
	if cfg.LoadReportInterval < 0 {
		return nil, fmt.Errorf("%w: Config.LoadReportInterval must be >= 0, got %v", ErrConfig, cfg.LoadReportInterval)
	}
	if cfg.LoadStreamPath != "" && (cfg.LoadStreamPath[0] != '/' || (&url.URL{Path: cfg.LoadStreamPath}).EscapedPath() != cfg.LoadStreamPath) {
		return nil, fmt.Errorf("%w: Config.LoadStreamPath must be an absolute path needing no escapes, got %q", ErrConfig, cfg.LoadStreamPath)
	}
	if cfg.LoadReportInterval == 0 {
		return nil, nil
	}
	path := cfg.LoadStreamPath
	if path == "" {
		path = LoadStreamPath
	}
	return &loadStreams{
		t: t, interval: cfg.LoadReportInterval, path: path, idle: loadStreamIdle, stallMin: loadStreamStallMin,
		prepare: cfg.LoadStreamRequest, failed: cfg.LoadStreamError,
		hosts: make(map[*host]*hostStreams), servers: make(map[serverKey]*serverStream),
	}, nil
}

// follow makes h hear from the servers its calls go to now: pool's replicas, or req's own
// host when pool is nil. RoundTrip calls it when h.streaming says h may not (the host's
// first call, a new pool, streams left for idleness).
func (s *loadStreams) follow(h *host, req *http.Request, pool *replica.Pool) {
	if s.closed.Load() {
		return // after Transport.Close: no streams, and no lock for every call
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return
	}
	hs := s.hosts[h]
	if hs == nil {
		hs = &hostStreams{byAddr: make(map[string]*serverStream)}
		s.hosts[h] = hs
		hs.idle = time.AfterFunc(s.idle, func() { s.checkIdle(h) })
	}
	hostHeader := req.Host
	if hostHeader == "" {
		hostHeader = req.URL.Host
	}
	want := map[string]bool{}
	if pool != nil {
		for i := range pool.Len() {
			want[pool.Addr(i)] = true
		}
	} else {
		want[req.URL.Host] = true
		own := req.URL.Host
		h.streamOwn.Store(&own)
	}
	// Where a report goes, before any stream is joined or left: a stream shared with another
	// host may deliver at any moment, and must find the host's replicas as they are now.
	h.streamPool.Store(pool)
	for addr, ss := range hs.byAddr {
		if !want[addr] || ss.key != (serverKey{req.URL.Scheme, addr, hostHeader, pool != nil}) {
			s.leave(h, ss)
			delete(hs.byAddr, addr)
		}
	}
	for addr := range want {
		if hs.byAddr[addr] == nil {
			hs.byAddr[addr] = s.join(h, serverKey{req.URL.Scheme, addr, hostHeader, pool != nil})
		}
	}
	h.used.Store(true)
	h.streaming.Store(true)
}

// join adds h to the hosts that hear from the server of k, opening its stream if none is
// open. s.mu is held.
func (s *loadStreams) join(h *host, k serverKey) *serverStream {
	ss := s.servers[k]
	if ss == nil {
		ctx, stop := context.WithCancel(context.Background())
		ss = &serverStream{key: k, stop: stop}
		ss.hosts.Store(&[]*host{})
		s.servers[k] = ss
		s.wg.Add(1)
		go s.run(ctx, ss)
	}
	hosts := append(slices.Clone(*ss.hosts.Load()), h)
	ss.hosts.Store(&hosts)
	return ss
}

// leave takes h off the hosts that hear from ss, and ends the stream once none does. s.mu is
// held.
func (s *loadStreams) leave(h *host, ss *serverStream) {
	hosts := slices.DeleteFunc(slices.Clone(*ss.hosts.Load()), func(x *host) bool { return x == h })
	ss.hosts.Store(&hosts)
	if len(hosts) == 0 {
		ss.stop()
		delete(s.servers, ss.key)
	}
}

// checkIdle takes h off its servers' streams if it made no call since the last check, and
// otherwise looks again after another idle period. A stream no other host hears ends.
func (s *loadStreams) checkIdle(h *host) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.hosts[h]
	if s.closed.Load() || hs == nil {
		return
	}
	if h.used.Swap(false) {
		hs.idle.Reset(s.idle)
		return
	}
	h.streaming.Store(false) // before the streams go: a call from now on opens them again
	hs.idle.Stop()
	for _, ss := range hs.byAddr {
		s.leave(h, ss)
	}
	delete(s.hosts, h)
}

// close ends every stream and waits for their goroutines.
func (s *loadStreams) close() {
	s.mu.Lock()
	s.closed.Store(true)
	for h, hs := range s.hosts {
		hs.idle.Stop()
		delete(s.hosts, h)
	}
	for k, ss := range s.servers {
		ss.stop()
		delete(s.servers, k)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// run keeps one server's stream open until ctx ends, opening it again after each failure.
func (s *loadStreams) run(ctx context.Context, ss *serverStream) {
	defer s.wg.Done()
	k := ss.key
	// Encoded: an interval under a millisecond is written with a µ, which a request line must not carry raw.
	u := &url.URL{Scheme: k.scheme, Host: k.addr, Path: s.path, RawQuery: url.Values{"interval": {s.interval.String()}}.Encode()}
	var wait, gap time.Duration
	for {
		var got, absent bool
		var err error
		got, absent, gap, err = s.read(ctx, ss, u, gap)
		if err != nil && ctx.Err() == nil { // a stream the Transport stopped did not fail
			s.tell(k.addr, err)
		}
		wait = retryWait(wait, got, absent)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// tell hands a stream's failure to Config.LoadStreamError, if any; a panic in it is dropped
// (it runs on the stream's goroutine).
func (s *loadStreams) tell(addr string, err error) {
	if s.failed == nil {
		return
	}
	defer func() { _ = recover() }()
	s.failed(addr, err)
}

// prepared calls Config.LoadStreamRequest, if any, on req, and returns the panic it raised
// as an error.
func (s *loadStreams) prepared(req *http.Request) (err error) {
	if s.prepare == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: Config.LoadStreamRequest panicked: %v", ErrLoadStream, v)
		}
	}()
	s.prepare(req)
	return nil
}

// retryWait is how long a stream waits before it is opened again, after a try that waited
// last before it (0: none yet), got reports or not, and found the server has no stream.
func retryWait(last time.Duration, got, absent bool) time.Duration {
	switch {
	case absent:
		return loadStreamAbsent
	case got || last == 0 || last == loadStreamAbsent:
		return loadStreamRetryMin
	}
	return min(2*last, loadStreamRetryMax)
}

// read opens the stream once and hands each report to its hosts until the stream ends,
// fails or stalls. got says a report came; absent, that the server has no stream to give. gap is the
// time between the last two reports seen on the server's streams, for the watchdog. err is why
// the stream is over: it always is, once read returns.
func (s *loadStreams) read(ctx context.Context, ss *serverStream, u *url.URL, gap time.Duration) (got, absent bool, _ time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, true, gap, err // an address no request can be made to: nothing to retry soon
	}
	req.Host = ss.key.hostHeader
	if err := s.prepared(req); err != nil {
		return false, false, gap, err
	}
	// The watchdog, from the request on (a server that never sends the response header has
	// stalled too): a server may grant a longer interval than asked; the gap between its
	// reports then sets how long a silence is a stall.
	stall := func() time.Duration {
		return max(loadStreamStallReports*max(s.interval, gap), s.stallMin)
	}
	var stalled atomic.Bool
	watchdog := time.AfterFunc(stall(), func() {
		stalled.Store(true)
		cancel()
	})
	defer watchdog.Stop()
	next := s.t.next
	if ss.key.replica && u.Scheme == "https" {
		if n, ok := s.t.replicaTLS(req.Host, u.Host); ok {
			next = n.next // a replica's certificate, checked as its requests' are (replicaTLS)
		}
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		if stalled.Load() {
			err = fmt.Errorf("%w: no response header from %s within %v: %w", ErrLoadStream, ss.key.addr, stall(), err)
		}
		return false, false, gap, err
	}
	defer resp.Body.Close()
	// The context ends the body's reads too when Next does not tie them to it
	// (Config.NextHonoursContext false): a stall, an idle host or Close closes the body.
	defer context.AfterFunc(ctx, func() { resp.Body.Close() })()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		err := fmt.Errorf("%w: %s answered %s", ErrLoadStream, ss.key.addr, resp.Status)
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return false, true, gap, err
		}
		return false, false, gap, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 128), loadStreamMaxLine)
	var last time.Time
	for sc.Scan() {
		now := time.Now()
		if !last.IsZero() {
			gap = now.Sub(last)
		}
		last = now
		watchdog.Reset(stall())
		l, ok := ParseLoad(sc.Text())
		if !ok {
			continue
		}
		got = true
		s.deliver(now, ss, l)
	}
	silence := stall()
	if stalled.Load() && !last.IsZero() {
		// The server may send less often than the watchdog allowed: next time, allow at
		// least this silence between two reports, up to what a report counts for.
		gap = min(max(gap, time.Since(last)), hedge.LoadMaxAge)
	}
	switch {
	case stalled.Load():
		err = fmt.Errorf("%w: no report from %s within %v", ErrLoadStream, ss.key.addr, silence)
	case sc.Err() != nil:
		err = fmt.Errorf("%w: reading %s: %w", ErrLoadStream, ss.key.addr, sc.Err())
	default:
		err = fmt.Errorf("%w: %s ended the stream", ErrLoadStream, ss.key.addr)
	}
	return got, false, gap, err
}

// deliver hands a stream's report to each of its hosts' policy (the backlog gate) and
// replicas (where a copy goes): the paths a response's report takes (call.noteLoad), with no
// request's wait.
func (s *loadStreams) deliver(now time.Time, ss *serverStream, l hedge.Load) {
	l.Wait = 0
	addr := ss.key.addr
	for _, h := range *ss.hosts.Load() {
		i := 0
		if p := h.streamPool.Load(); p != nil {
			if i = p.Index(addr); i < 0 {
				continue // a replica no longer in h's pool: h is leaving the stream
			}
			p.Set().ReportLoad(now, i, replica.Load{Queued: l.Queued, Busy: l.Busy, Workers: l.Workers})
		} else if own := h.streamOwn.Load(); own == nil || *own != addr {
			continue // a replica of the pool h had: h is leaving the stream
		}
		h.Policy().ReportLoad(now, i, l)
	}
	if f := loadStreamReceived.Load(); f != nil {
		(*f)(addr, l)
	}
}

// loadStreamReceived, when set (by tests), is called after each stream report is delivered.
var loadStreamReceived atomic.Pointer[func(addr string, l hedge.Load)]

// Close ends the Transport's load streams ([Config.LoadReportInterval]), waiting for their
// goroutines, and closes its idle connections ([Transport.CloseIdleConnections]). Calls made
// after Close still work, without streams. A Transport without streams needs no Close (its
// connections close when idle, as http.Transport's do), and a host's streams close by
// themselves after a minute without a call.
func (t *Transport) Close() error {
	if t.streams != nil {
		t.streams.close()
	}
	t.CloseIdleConnections()
	t.closeMu.Lock()
	fns := t.onClose
	t.onClose, t.closed = nil, true
	t.closeMu.Unlock()
	for _, f := range fns {
		f()
	}
	return nil
}

// OnClose has f called once, when Close is first called (at once if it has been): how a layer
// built around the Transport lets go of it, as hedgeotel stops reporting its gauges. f runs on
// the goroutine that calls Close, after the streams have ended. A nil f is ignored: called
// from Close, it would panic there and skip the functions after it.
func (t *Transport) OnClose(f func()) {
	if f == nil {
		return
	}
	t.closeMu.Lock()
	if !t.closed {
		t.onClose = append(t.onClose, f)
		t.closeMu.Unlock()
		return
	}
	t.closeMu.Unlock()
	f()
}
