package hedgehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// streamServer is a server whose Queue reports only on its load stream, counting the streams
// asked for and open.
type streamServer struct {
	srv     *httptest.Server
	q       *Queue
	ls      atomic.Pointer[LoadStream] // replaced when a test closes one
	release chan struct{}              // closed to let the handler's blocked requests return
	block   atomic.Bool                // the handler blocks until release
	asked   atomic.Int32               // stream requests received
	open    atomic.Int32               // streams being served
}

func startStreamServer(t *testing.T, proto string, workers int, min time.Duration) (*streamServer, *http.Transport) {
	t.Helper()
	s := &streamServer{release: make(chan struct{})}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.block.Load() {
			<-s.release
		}
		io.WriteString(w, "ok")
	})
	var err error
	if s.q, err = NewQueue(api, QueueConfig{Workers: workers, NoLoadReport: true}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.q.LoadStream(min)
	if err != nil {
		t.Fatal(err)
	}
	s.ls.Store(ls)
	mux := http.NewServeMux()
	mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.asked.Add(1)
		s.open.Add(1)
		defer s.open.Add(-1)
		s.ls.Load().ServeHTTP(w, r)
	}))
	mux.Handle("/", s.q)
	srv, tr := startServer(t, proto, mux)
	srv.Config.RegisterOnShutdown(func() { s.ls.Load().Close() })
	t.Cleanup(func() {
		s.ls.Load().Close() // before the server closes: httptest's Close waits for open requests
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	s.srv = srv
	return s, tr
}

// reportsSeen collects the stream reports every Transport of the test delivers, by address.
type reportsSeen struct {
	mu   sync.Mutex
	last map[string]hedge.Load
	n    map[string]int
}

func watchReports(t *testing.T) *reportsSeen {
	r := &reportsSeen{last: map[string]hedge.Load{}, n: map[string]int{}}
	f := func(addr string, l hedge.Load) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.last[addr] = l
		r.n[addr]++
	}
	loadStreamReceived.Store(&f)
	t.Cleanup(func() { loadStreamReceived.Store(nil) })
	return r
}

func (r *reportsSeen) get(addr string) (hedge.Load, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[addr], r.n[addr]
}

// A Transport with LoadReportInterval opens a stream on each replica at the host's first
// call and hands every report to the host's policy and replicas, whatever replica its calls
// reach: a replica it never called is known to be busy, and a hedge goes elsewhere. Close
// ends the streams.
func TestTransportLoadStreams(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			seen := watchReports(t)
			a, base := startStreamServer(t, proto, 1, 5*time.Millisecond)
			b, _ := startStreamServer(t, proto, 1, 5*time.Millisecond)
			ua, _ := url.Parse(a.srv.URL)
			ub, _ := url.Parse(b.srv.URL)
			addrs := []string{ua.Host, ub.Host}
			tr, err := NewTransport(Config{
				Next:               base,
				Replicas:           func(string) []string { return addrs },
				LoadReportInterval: 5 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			c := &http.Client{Transport: tr}
			getOK(t, c, a.srv.URL)
			if !waitFor(5*time.Second, func() bool {
				_, na := seen.get(ua.Host)
				_, nb := seen.get(ub.Host)
				return na >= 3 && nb >= 3
			}) {
				t.Fatalf("stream reports: %v", seen.n)
			}
			if n := a.asked.Load() + b.asked.Load(); n != 2 {
				t.Fatalf("%d streams asked for, want one per replica", n)
			}

			// b's one worker is taken and a request waits: its stream says so, though this
			// client's calls never reached b.
			b.block.Store(true)
			plain := &http.Client{Transport: base}
			for range 2 {
				go func() {
					resp, err := plain.Get(b.srv.URL)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			if !waitFor(5*time.Second, func() bool {
				l, _ := seen.get(ub.Host)
				return l.Queued == 1 && l.Busy == 1 && l.Workers == 1
			}) {
				l, _ := seen.get(ub.Host)
				t.Fatalf("b's stream: %+v, want 1 queued, 1 of 1 busy", l)
			}
			key := tr.hostKey(t, a.srv.URL)
			queued, workers, ok := tr.Policy(key).ServerQueue(time.Now())
			if !ok || queued != 0 || workers != 1 {
				t.Fatalf("policy's shortest reported queue: %d of %d workers, %v; want a's, empty", queued, workers, ok)
			}
			set := tr.Replicas(key).Set()
			ib := tr.Replicas(key).Index(ub.Host)
			if l, ok := set.Load(time.Now(), ib); !ok || l.Queued != 1 || l.Busy != 1 {
				t.Fatalf("b's load in the replica set: %+v, %v", l, ok)
			}
			close(b.release)

			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if !waitFor(5*time.Second, func() bool { return a.open.Load() == 0 && b.open.Load() == 0 }) {
				t.Fatalf("streams still open after Close: %d, %d", a.open.Load(), b.open.Load())
			}
			// A call after Close works, and opens no stream.
			getOK(t, c, a.srv.URL)
			if n := a.asked.Load() + b.asked.Load(); n != 2 {
				t.Fatalf("a call after Close asked for %d streams in all, want the 2 from before", n)
			}
		})
	}
}

// A host's streams close when it stops calling, open again at its next call, follow its
// replicas when they change, and come back after the server ends them.
func TestTransportLoadStreamLifecycle(t *testing.T) {
	checkGoroutines(t)
	seen := watchReports(t)
	a, base := startStreamServer(t, "HTTP/1.1", 2, 5*time.Millisecond)
	b, _ := startStreamServer(t, "HTTP/1.1", 2, 5*time.Millisecond)
	ua, _ := url.Parse(a.srv.URL)
	ub, _ := url.Parse(b.srv.URL)
	var addrs atomic.Pointer[[]string]
	both := []string{ua.Host, ub.Host}
	addrs.Store(&both)
	tr, err := NewTransport(Config{
		Next:               base,
		Replicas:           func(string) []string { return *addrs.Load() },
		LoadReportInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.streams.idle = 100 * time.Millisecond
	c := &http.Client{Transport: tr}
	getOK(t, c, a.srv.URL)
	if !waitFor(5*time.Second, func() bool { return a.open.Load() == 1 && b.open.Load() == 1 }) {
		t.Fatalf("open streams: %d, %d; want 1, 1", a.open.Load(), b.open.Load())
	}

	// No call for two idle checks: the streams close.
	if !waitFor(5*time.Second, func() bool { return a.open.Load() == 0 && b.open.Load() == 0 }) {
		t.Fatalf("an idle host's streams still open: %d, %d", a.open.Load(), b.open.Load())
	}
	getOK(t, c, a.srv.URL)
	if !waitFor(5*time.Second, func() bool { return a.open.Load() == 1 && b.open.Load() == 1 }) {
		t.Fatalf("after a new call, open streams: %d, %d; want 1, 1", a.open.Load(), b.open.Load())
	}

	// b leaves the replicas: its stream closes at the next call; a's stays.
	tr.streams.idle = time.Hour
	onlyA := []string{ua.Host}
	addrs.Store(&onlyA)
	asked := a.asked.Load()
	getOK(t, c, a.srv.URL)
	if !waitFor(5*time.Second, func() bool { return b.open.Load() == 0 }) {
		t.Fatal("a replica that left still has its stream")
	}
	if a.open.Load() != 1 || a.asked.Load() != asked {
		t.Fatalf("the replica that stayed: %d open, %d asked (before %d); want its stream kept", a.open.Load(), a.asked.Load(), asked)
	}

	// The server ends a's stream; the client opens it again (after 503s while it refuses).
	_, before := seen.get(ua.Host)
	a.ls.Load().Close()
	if !waitFor(5*time.Second, func() bool { return a.open.Load() == 0 }) {
		t.Fatal("Close left a stream open")
	}
	ls, err := a.q.LoadStream(5 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	a.ls.Store(ls)
	if !waitFor(10*time.Second, func() bool {
		_, n := seen.get(ua.Host)
		return a.open.Load() == 1 && n > before+2
	}) {
		_, n := seen.get(ua.Host)
		t.Fatalf("after the server ended it: %d streams open, %d reports (before %d)", a.open.Load(), n, before)
	}
}

// Hosts split by path (Config.Key) that call the same replicas share one stream on each,
// and each hears every report; the stream ends only when the last of them stops calling. A
// key that sends another Host header to the same address is another server's stream.
func TestTransportLoadStreamShared(t *testing.T) {
	checkGoroutines(t)
	a, base := startStreamServer(t, "HTTP/1.1", 2, 5*time.Millisecond)
	b, _ := startStreamServer(t, "HTTP/1.1", 2, 5*time.Millisecond)
	ua, _ := url.Parse(a.srv.URL)
	ub, _ := url.Parse(b.srv.URL)
	addrs := []string{ua.Host, ub.Host}
	tr, err := NewTransport(Config{
		Next:               base,
		Key:                func(r *http.Request) string { return r.Host + r.URL.Path },
		Replicas:           func(string) []string { return addrs },
		LoadReportInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.streams.idle = time.Hour
	c := &http.Client{Transport: tr}
	open := func(na, nb int32) bool {
		return waitFor(5*time.Second, func() bool { return a.open.Load() == na && b.open.Load() == nb })
	}
	getOK(t, c, a.srv.URL+"/search")
	getOK(t, c, a.srv.URL+"/write")
	if !open(1, 1) {
		t.Fatalf("open streams: %d, %d; want 1, 1", a.open.Load(), b.open.Load())
	}
	if n := a.asked.Load() + b.asked.Load(); n != 2 {
		t.Fatalf("two keys on two replicas asked for %d streams, want one per replica", n)
	}
	// Both keys' policies hear both replicas, with no per-response report (NoLoadReport).
	for _, key := range []string{ua.Host + "/search", ua.Host + "/write"} {
		if !waitFor(5*time.Second, func() bool {
			_, workers, ok := tr.Policy(key).ServerQueue(time.Now())
			set := tr.Replicas(key).Set()
			_, okb := set.Load(time.Now(), tr.Replicas(key).Index(ub.Host))
			return ok && workers == 2 && okb
		}) {
			t.Fatalf("%s heard no stream report", key)
		}
	}

	// /write stops calling, /search goes on: the streams stay, /write leaves them. The idle
	// checks run by hand here (the idle timer's own run is TestTransportLoadStreamLifecycle's).
	search, write := tr.hostOf(t, a.srv.URL+"/search"), tr.hostOf(t, a.srv.URL+"/write")
	for range 2 {
		getOK(t, c, a.srv.URL+"/search")
		tr.streams.checkIdle(search)
		tr.streams.checkIdle(write)
	}
	tr.streams.mu.Lock()
	_, searchOn := tr.streams.hosts[search]
	_, writeOn := tr.streams.hosts[write]
	tr.streams.mu.Unlock()
	if !searchOn || writeOn {
		t.Fatalf("after /write went idle: /search on streams %v, /write %v; want true, false", searchOn, writeOn)
	}
	if !open(1, 1) || a.asked.Load()+b.asked.Load() != 2 {
		t.Fatalf("after /write went idle: %d+%d open, %d asked; want 1+1, 2", a.open.Load(), b.open.Load(), a.asked.Load()+b.asked.Load())
	}
	// Then /search stops too: the streams end.
	tr.streams.checkIdle(search)
	tr.streams.checkIdle(search)
	if !open(0, 0) {
		t.Fatalf("streams of idle hosts still open: %d, %d", a.open.Load(), b.open.Load())
	}

	// Another Host header to the same addresses: a stream of its own on each, beside /search's.
	getOK(t, c, a.srv.URL+"/search")
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/search", nil)
	req.Host = "other.example"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !open(2, 2) {
		t.Fatalf("two virtual hosts: %d, %d streams open; want 2, 2", a.open.Load(), b.open.Load())
	}
}

// A server without a load stream is asked once, not at every call (retryWait, tested
// beside it, waits a minute before asking again).
func TestTransportLoadStreamAbsent(t *testing.T) {
	checkGoroutines(t)
	var asked atomic.Int32
	mux := http.NewServeMux()
	mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv, base := startServer(t, "HTTP/1.1", mux)
	tr, err := NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	for range 20 {
		getOK(t, c, srv.URL)
	}
	if !waitFor(5*time.Second, func() bool { return asked.Load() >= 1 }) {
		t.Fatal("the stream was never asked for")
	}
	for range 20 {
		getOK(t, c, srv.URL)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("a server without a stream was asked %d times, want 1", n)
	}
}

// get makes a GET of u through c, reads the body and fails the test on an error.
func getOK(t *testing.T, c *http.Client, u string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
}

// hostKey returns the key the Transport files u's host under.
func (tr *Transport) hostKey(t *testing.T, u string) string {
	t.Helper()
	return tr.hostOf(t, u).name
}

// hostOf returns the host the Transport files a GET of u under.
func (tr *Transport) hostOf(t *testing.T, u string) *host {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tr.hostFor(req)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A stream that goes silent is taken for stalled and opened again; one whose server grants a
// longer interval than asked is not, once the client has seen that interval.
func TestTransportLoadStreamStall(t *testing.T) {
	checkGoroutines(t)
	var asked, silentAsked atomic.Int32
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	// /silent: one report, then nothing, the response left open.
	mux.Handle("/silent"+LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		silentAsked.Add(1)
		io.WriteString(w, "workers=1\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	// The stream proper: a report every 60 ms, whatever the client asks.
	ls := newLoadStream(t, 60*time.Millisecond)
	defer ls.Close()
	mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		ls.ServeHTTP(w, r)
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv, base := startServer(t, "HTTP/1.1", mux)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	seen := watchReports(t)

	for _, tc := range []struct {
		path  string
		asked *atomic.Int32
	}{{"/silent" + LoadStreamPath, &silentAsked}, {LoadStreamPath, &asked}} {
		var told streamErrors
		tr, err := NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond, LoadStreamPath: tc.path, LoadStreamError: told.tell})
		if err != nil {
			t.Fatal(err)
		}
		// Silent for 10 intervals of 1 ms, or 50 ms: a stall, but for a server seen to report
		// every 60 ms.
		tr.streams.stallMin = 50 * time.Millisecond
		getOK(t, &http.Client{Transport: tr}, srv.URL)
		switch tc.path {
		case LoadStreamPath:
			// 20 reports, 60 ms apart: the first silence before the second report, judged by
			// the interval asked, may end the first stream; none after that.
			if !waitFor(10*time.Second, func() bool { _, n := seen.get(u.Host); return n >= 20 }) {
				_, n := seen.get(u.Host)
				t.Fatalf("%d reports from a stream granted 60 ms", n)
			}
			if n := tc.asked.Load(); n > 2 {
				t.Fatalf("a stream granted 60 ms was opened %d times for 20 reports, want at most 2", n)
			}
		default:
			if !waitFor(5*time.Second, func() bool { return tc.asked.Load() >= 3 }) {
				t.Fatalf("a silent stream was opened %d times, want it opened again after each stall", tc.asked.Load())
			}
			if err, _ := told.find("no report from " + u.Host); !errors.Is(err, ErrLoadStream) {
				t.Errorf("a stalled stream: LoadStreamError told %q, want a stall wrapping ErrLoadStream", &told)
			}
		}
		tr.Close()
	}
}

// A server's WriteTimeout does not end a stream: the handler gives each line a write deadline
// of its own.
func TestLoadStreamOutlivesWriteTimeout(t *testing.T) {
	checkGoroutines(t)
	ls := newLoadStream(t, 5*time.Millisecond)
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			s := httptest.NewUnstartedServer(ls)
			s.Config.WriteTimeout = 50 * time.Millisecond
			var tr *http.Transport
			if proto == "HTTP/2" {
				s.EnableHTTP2 = true
				s.StartTLS()
				tr = &http.Transport{TLSClientConfig: s.Client().Transport.(*http.Transport).TLSClientConfig.Clone(), ForceAttemptHTTP2: true}
			} else {
				s.Start()
				tr = &http.Transport{}
			}
			defer s.Close()
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodGet, s.URL+LoadStreamPath+"?interval=5ms", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			checkProto(t, proto, resp)
			sc := bufio.NewScanner(resp.Body)
			start := time.Now()
			lines := 0
			for time.Since(start) < 4*s.Config.WriteTimeout && sc.Scan() {
				lines++
			}
			if time.Since(start) < 4*s.Config.WriteTimeout {
				t.Fatalf("the stream ended after %v and %d reports (%v), within 4 × WriteTimeout", time.Since(start), lines, sc.Err())
			}
		})
	}
}

// newLoadStream returns the load stream, never more often than min, of a one-worker queue in
// front of a handler that answers 404.
func newLoadStream(t *testing.T, min time.Duration) *LoadStream {
	t.Helper()
	q, err := NewQueue(http.NotFoundHandler(), QueueConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := q.LoadStream(min)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// A stream whose server takes the request and never sends the response header (a hung
// handler, a proxy holding the request) has stalled as much as one that goes silent after a
// report: it is opened again, and the next one reports.
func TestTransportLoadStreamNoHeader(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var asked atomic.Int32
			release := make(chan struct{})
			ls := newLoadStream(t, time.Millisecond)
			mux := http.NewServeMux()
			mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) == 1 {
					select { // the first stream never answers
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				ls.ServeHTTP(w, r)
			}))
			mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
			srv, base := startServer(t, proto, mux)
			t.Cleanup(func() { ls.Close(); close(release) }) // before the server closes (registered after it)
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			seen := watchReports(t)
			tr, err := NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			tr.streams.stallMin = 50 * time.Millisecond
			getOK(t, &http.Client{Transport: tr}, srv.URL)
			if !waitFor(5*time.Second, func() bool { _, n := seen.get(u.Host); return n > 0 }) {
				t.Fatalf("no report within 5 s (100 stall limits): the stream was asked for %d times", asked.Load())
			}
			if n := asked.Load(); n < 2 {
				t.Fatalf("reports came on the stream that never answered (asked %d times)", n)
			}
		})
	}
}

// A Next that does not tie a response body's reads to its request's context
// (Config.NextHonoursContext false) still lets the streams stop: a stall opens the stream
// again, and Close returns.
func TestTransportLoadStreamNextIgnoresContext(t *testing.T) {
	checkGoroutines(t)
	var asked atomic.Int32
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.WriteString(w, "workers=1\n") // one report, then silence
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv, base := startServer(t, "HTTP/1.1", mux)
	t.Cleanup(func() { close(release) })
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return base.RoundTrip(r.WithContext(context.Background())) // the request's context dropped
	})
	tr, err := NewTransport(Config{Next: next, LoadReportInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tr.streams.stallMin = 50 * time.Millisecond
	getOK(t, &http.Client{Transport: tr}, srv.URL)
	if !waitFor(5*time.Second, func() bool { return asked.Load() >= 3 }) {
		t.Errorf("a silent stream was opened %d times in 5 s with a 50 ms stall limit, want 3", asked.Load())
	}
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Transport.Close has not returned within 5 s")
	}
}

// A client that keeps its stream open but stops reading fills the connection's buffers (or
// HTTP/2's flow-control window), and the handler's next write blocks: its write deadline ends
// the stream, and LoadStream.Close returns.
func TestLoadStreamClientStopsReading(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			ls := newLoadStream(t, time.Nanosecond) // as fast as it can write: the buffers fill at once
			ls.writeMin = 100 * time.Millisecond
			var lines atomic.Int64
			srv, tr := startServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ls.ServeHTTP(&countingWriter{ResponseWriter: w, n: &lines}, r)
			}))
			// A small flow-control window for HTTP/2 (4 MiB by default): the test fills it sooner.
			tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerConnection: 64 << 10, MaxReceiveBufferPerStream: 64 << 10}
			req, err := http.NewRequest(http.MethodGet, srv.URL+LoadStreamPath+"?interval=1ns", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close() // never read
			checkProto(t, proto, resp)
			// Until the handler stops writing: blocked, or ended by its deadline.
			last := int64(-1)
			for i := 0; i < 100 && lines.Load() != last; i++ {
				last = lines.Load()
				time.Sleep(200 * time.Millisecond)
			}
			if lines.Load() != last {
				t.Fatalf("the handler still writes after 20 s (%d lines) to a client that reads nothing", lines.Load())
			}
			closed := make(chan struct{})
			go func() { ls.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				resp.Body.Close() // let the handler go, so that the test can end
				<-closed
				t.Fatalf("LoadStream.Close took over 5 s: its handler was held in a write after %d lines", last)
			}
		})
	}
}

// countingWriter counts the handler's writes.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.ResponseWriter.Write(p)
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// A report from a stream a host is leaving (a replica of the pool it had, or of none now)
// reaches no replica of the host's policy: it would be read as the load of whichever replica
// has that number now.
func TestLoadStreamReportLeavingHost(t *testing.T) {
	tr, err := NewTransport(Config{LoadReportInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	req, err := http.NewRequest(http.MethodGet, "http://own.example:8080/", nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tr.hostFor(req)
	if err != nil {
		t.Fatal(err)
	}
	own := "own.example:8080"
	h.streamOwn.Store(&own) // no pool: the host hears from its own server only
	stream := func(addr string) *serverStream {
		ss := &serverStream{key: serverKey{"http", addr, addr, false}}
		ss.hosts.Store(&[]*host{h})
		return ss
	}
	now := time.Now()
	tr.streams.deliver(now, stream("replica.example:8080"), hedge.Load{Queued: 9, Busy: 4, Workers: 4})
	if q, w, ok := h.Policy().ServerQueue(now); ok {
		t.Fatalf("a report from a server the host no longer calls reached its policy: queue %d of %d workers", q, w)
	}
	tr.streams.deliver(now, stream(own), hedge.Load{Queued: 2, Busy: 4, Workers: 4})
	if q, w, ok := h.Policy().ServerQueue(now); !ok || q != 2 || w != 4 {
		t.Fatalf("its own server's report: queue %d of %d workers (%v), want 2 of 4", q, w, ok)
	}
}
