package hedgehttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// These tests check the start signal over real loopback HTTP/1.1 and HTTP/2 connections: a
// Queue writes StartedStatus when a worker starts a request, a Transport hears it, and tied
// copies cancel each other with it. Every wait is bounded; none asserts on timing.

// connServer is a server started like startServer's, that also counts its open connections,
// so a test can check it left none behind.
type connServer struct {
	*httptest.Server
	open atomic.Int32
}

func startConnServer(t testing.TB, proto string, h http.Handler) (*connServer, *http.Transport) {
	t.Helper()
	cs := &connServer{Server: httptest.NewUnstartedServer(h)}
	cs.Config.ErrorLog = log.New(io.Discard, "", 0)
	cs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			cs.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			cs.open.Add(-1)
		}
	}
	var tr *http.Transport
	switch proto {
	case "HTTP/1.1":
		cs.Start()
		tr = &http.Transport{MaxIdleConnsPerHost: 64}
	case "HTTP/2":
		cs.EnableHTTP2 = true
		cs.StartTLS()
		base := cs.Client().Transport.(*http.Transport)
		tr = &http.Transport{TLSClientConfig: base.TLSClientConfig.Clone(), ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}
	default:
		t.Fatalf("unknown proto %q", proto)
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cs.Close()
	})
	return cs, tr
}

// checkConnsClosed closes the client's idle connections and waits for the servers to see
// every connection closed: none is left open by a cancelled copy or a drained loser. (It
// closes them more than once: a connection whose response body was just closed may reach
// the idle pool a moment later.)
func checkConnsClosed(t *testing.T, tr interface{ CloseIdleConnections() }, servers ...*connServer) {
	t.Helper()
	for i, s := range servers {
		if !waitFor(5*time.Second, func() bool { tr.CloseIdleConnections(); return s.open.Load() == 0 }) {
			t.Errorf("server %d: %d connections still open after the client closed its idle ones", i, s.open.Load())
		}
	}
}

// TestQueueStartSignalArrivesWhileTheHandlerRuns: the client hears StartedStatus once a
// worker takes its request, before the answer, while the handler is still running (here
// the handler waits for the client to have heard it). A caller's own trace still sees
// everything it asked for.
func TestQueueStartSignalArrivesWhileTheHandlerRuns(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			heard := make(chan struct{})
			var handlerWaited atomic.Bool
			q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-heard:
					handlerWaited.Store(true)
				case <-time.After(5 * time.Second):
				}
				io.WriteString(w, "done")
			}), QueueConfig{Workers: 1})
			srv, base := startConnServer(t, proto, q)
			tr := newTransport(t, Config{Next: base})
			tr.signals = true // as for a trigger that reads them, without its hedges

			var codes []int
			var firstByte atomic.Int32
			trace := &httptrace.ClientTrace{
				Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
					codes = append(codes, code)
					if code == StartedStatus {
						close(heard)
					}
					return nil
				},
				GotFirstResponseByte: func() { firstByte.Add(1) },
			}
			req := mustRequest(t, "GET", srv.URL, nil).WithContext(httptrace.WithClientTrace(context.Background(), trace))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			checkProto(t, proto, resp)
			if b := readAll(t, resp); b != "done" || resp.StatusCode != http.StatusOK {
				t.Fatalf("answer %d %q, want 200 done", resp.StatusCode, b)
			}
			if len(codes) != 1 || codes[0] != StartedStatus || !handlerWaited.Load() {
				t.Errorf("1xx responses seen by the caller's trace: %v (handler waited for it: %v); want one %d while the handler ran",
					codes, handlerWaited.Load(), StartedStatus)
			}
			if firstByte.Load() == 0 && proto == "HTTP/1.1" {
				t.Errorf("the caller's GotFirstResponseByte was never called")
			}
			checkConnsClosed(t, base, srv)
		})
	}
}

// TestQueueStartSignalOnlyWhenAsked: no signal to a client that did not ask for it, to an
// HTTP/1.0 client (which must never receive a 1xx), or from a queue configured without it.
func TestQueueStartSignalOnlyWhenAsked(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	cases := []struct {
		name   string
		cfg    QueueConfig
		header bool
		want   []int
	}{
		{"asked", QueueConfig{}, true, []int{StartedStatus}},
		{"not asked", QueueConfig{}, false, nil},
		{"turned off", QueueConfig{NoStartSignal: true}, true, nil},
	}
	for _, proto := range protos {
		for _, c := range cases {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				checkGoroutines(t)
				srv, base := startConnServer(t, proto, mustQueue(t, ok, c.cfg))
				var codes []int
				ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
					Got1xxResponse: func(code int, _ textproto.MIMEHeader) error { codes = append(codes, code); return nil },
				})
				req := mustRequest(t, "GET", srv.URL, nil).WithContext(ctx)
				if c.header {
					req.Header.Set(StartSignalHeader, "1")
				}
				resp, err := base.RoundTrip(req) // a plain client: it sends only what the test says
				if err != nil {
					t.Fatal(err)
				}
				checkProto(t, proto, resp)
				if b := readAll(t, resp); b != "ok" {
					t.Fatalf("body %q", b)
				}
				if fmt.Sprint(codes) != fmt.Sprint(c.want) {
					t.Errorf("1xx responses %v, want %v", codes, c.want)
				}
				checkConnsClosed(t, base, srv)
			})
		}
	}
	t.Run("HTTP/1.0", func(t *testing.T) {
		checkGoroutines(t)
		srv, _ := startConnServer(t, "HTTP/1.1", mustQueue(t, ok, QueueConfig{}))
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: x\r\n%s: 1\r\n\r\n", StartSignalHeader)
		status, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.HasPrefix(status, "HTTP/1.0 200") {
			t.Errorf("an HTTP/1.0 client's first status line is %q (%v), want HTTP/1.0 200", status, err)
		}
	})
}

// TestTransportAsksForStartSignalsOnlyWhenItsTriggerReadsThem: Tied reads them, so every
// attempt asks; AtQuantile does not, so no request carries the header and no server writes
// a 1xx for it.
func TestTransportAsksForStartSignalsOnlyWhenItsTriggerReadsThem(t *testing.T) {
	for _, c := range []struct {
		trigger hedge.Trigger
		want    string
	}{{hedge.Tied(), "1"}, {hedge.AtQuantile(0.95), ""}} {
		t.Run(c.trigger.String(), func(t *testing.T) {
			checkGoroutines(t)
			var mu sync.Mutex
			var seen []string
			srv, base := startConnServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get(StartSignalHeader))
				mu.Unlock()
				io.WriteString(w, "ok")
			}))
			tr := newTransport(t, Config{Next: base, Policy: hedge.Config{Trigger: c.trigger, Budget: budget.Config{Off: true}}})
			resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil))
			if err != nil {
				t.Fatal(err)
			}
			if b := readAll(t, resp); b != "ok" {
				t.Fatalf("body %q", b)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("no request reached the server")
			}
			for _, v := range seen {
				if v != c.want {
					t.Errorf("%s: the server saw %s %q, want %q", c.trigger, StartSignalHeader, v, c.want)
				}
			}
		})
	}
}

// tiedReplicas is two replicas behind Queues of one worker each. The test holds each
// replica's worker with a request of its own (hold), so that both copies of a tied call wait
// in a queue; it then frees A's worker (free), and A's copy starts first.
type tiedReplicas struct {
	a, b     *connServer
	qa, qb   *Queue
	base     *http.Transport
	addrs    []string
	ran      [2]atomic.Int32 // handler runs of tied calls, by replica
	holding  [2]chan struct{}
	unhold   [2]chan struct{}
	released chan struct{} // closed by the test: tied calls' handlers answer
	held     [2]chan error // the end of each holding request
}

func startTiedReplicas(t *testing.T, proto string, cfg QueueConfig) *tiedReplicas {
	rs := &tiedReplicas{released: make(chan struct{})}
	for i := range 2 {
		rs.holding[i], rs.unhold[i], rs.held[i] = make(chan struct{}), make(chan struct{}), make(chan error, 1)
	}
	handler := func(replica int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			release := rs.released
			if r.URL.Path == "/hold" {
				close(rs.holding[replica])
				release = rs.unhold[replica]
			} else {
				rs.ran[replica].Add(1)
			}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second): // a bound, never reached when the test passes
			}
			fmt.Fprintf(w, "replica %d", replica)
		})
	}
	rs.qa = mustQueue(t, handler(0), cfg)
	rs.qb = mustQueue(t, handler(1), cfg)
	rs.a, rs.base = startConnServer(t, proto, rs.qa)
	rs.b, _ = startConnServer(t, proto, rs.qb)
	rs.addrs = []string{rs.a.Listener.Addr().String(), rs.b.Listener.Addr().String()}
	for i, srv := range []*connServer{rs.a, rs.b} {
		go func() {
			resp, err := rs.base.RoundTrip(mustRequest(t, "GET", srv.URL+"/hold", nil))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			rs.held[i] <- err
		}()
		select {
		case <-rs.holding[i]:
		case <-time.After(5 * time.Second):
			t.Fatalf("the request holding replica %d never ran", i)
		}
	}
	return rs
}

// tiedCall sends one tied call for /work through a Transport with Tied and the two replicas,
// once both copies are queued frees A's worker, and returns the answer and the call's log.
func (rs *tiedReplicas) tiedCall(t *testing.T, whenAStarted func()) (string, hedge.Log) {
	t.Helper()
	tr := newTransport(t, Config{
		Policy:   hedge.Config{Trigger: hedge.Tied(), Budget: budget.Config{Off: true}},
		Next:     rs.base,
		Replicas: func(string) []string { return rs.addrs },
	})
	type answer struct {
		body string
		err  error
	}
	done := make(chan answer, 1)
	var lg hedge.Log
	go func() {
		resp, err := tr.RoundTrip(mustRequest(t, "GET", rs.a.URL+"/work", nil).WithContext(hedge.WithLog(context.Background(), &lg)))
		if err != nil {
			done <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{string(b), err}
	}()
	if !waitFor(5*time.Second, func() bool { return rs.qa.Stats().Queued == 1 && rs.qb.Stats().Queued == 1 }) {
		t.Fatalf("the copies never both queued: A %+v, B %+v", rs.qa.Stats(), rs.qb.Stats())
	}
	close(rs.unhold[0])
	if err := <-rs.held[0]; err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool { return rs.ran[0].Load() == 1 }) {
		t.Fatalf("A's copy never started: %+v", rs.qa.Stats())
	}
	whenAStarted()
	close(rs.released)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	// B's worker stays held until B's copy has left the queue, as a cancelled copy does once
	// the server hears of it: then B's handler count shows whether it ever ran.
	if !waitFor(5*time.Second, func() bool { return rs.qb.Stats().Queued == 0 }) {
		t.Errorf("B's copy never left the queue: %+v", rs.qb.Stats())
	}
	close(rs.unhold[1])
	if err := <-rs.held[1]; err != nil {
		t.Fatal(err)
	}
	return a.body, lg
}

// TestTiedCopyIsDroppedFromTheQueueWhenItsTwinStarts: with Tied, the Transport sends both
// copies at once to different replicas, where both wait for a worker. When A's worker frees,
// its copy starts, and its StartedStatus cancels the copy still waiting in B's queue, which
// drops it without running it. A's handler answers only after that, so the cancellation
// cannot have come from the call ending.
func TestTiedCopyIsDroppedFromTheQueueWhenItsTwinStarts(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			rs := startTiedReplicas(t, proto, QueueConfig{Workers: 1, Queue: 4})
			body, lg := rs.tiedCall(t, func() {
				if !waitFor(5*time.Second, func() bool { return rs.qb.Stats().Abandoned == 1 }) {
					t.Errorf("B's queue never dropped the copy when A's started: %+v", rs.qb.Stats())
				}
			})
			if body != "replica 0" {
				t.Fatalf("answer %q, want replica 0's", body)
			}
			if a, b := rs.ran[0].Load(), rs.ran[1].Load(); a != 1 || b != 0 {
				t.Errorf("the tied call ran the handler %d times on A and %d on B; want 1 and 0", a, b)
			}
			if s := rs.qb.Stats(); s.Abandoned != 1 || s.Admitted != 1 {
				t.Errorf("replica B: %+v; want the copy abandoned and only the holding request admitted", s)
			}
			if len(lg.Attempts) != 2 || lg.Attempts[0].Result != hedge.Discarded || lg.Attempts[1].Result != hedge.OK {
				t.Errorf("log %v, want the queued copy discarded first, then the other OK", lg)
			}
			t.Log(lg)
			checkConnsClosed(t, rs.base, rs.a, rs.b)
		})
	}
}

// TestTiedWithoutStartSignalFallsBack: against servers that send no start signal, tied
// copies race as any hedge does: A's copy runs while B's still waits, and B's is cancelled
// only when A's answer wins. Nothing breaks, and nothing is cancelled early.
func TestTiedWithoutStartSignalFallsBack(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			rs := startTiedReplicas(t, proto, QueueConfig{Workers: 1, Queue: 4, NoStartSignal: true})
			body, lg := rs.tiedCall(t, func() {
				if s := rs.qb.Stats(); s.Queued != 1 || s.Abandoned != 0 {
					t.Errorf("B's copy left the queue while A's ran, with no start signal: %+v", s)
				}
			})
			if body != "replica 0" {
				t.Fatalf("answer %q, want replica 0's", body)
			}
			if len(lg.Attempts) != 2 || lg.Attempts[0].Result != hedge.OK || lg.Attempts[1].Result != hedge.Discarded {
				t.Errorf("log %v, want A's copy OK, then B's discarded when it won", lg)
			}
			if s := rs.qb.Stats(); s.Abandoned != 1 || rs.ran[1].Load() != 0 {
				t.Errorf("replica B: %+v, ran %d; want the losing copy dropped without running", s, rs.ran[1].Load())
			}
			t.Log(lg)
			checkConnsClosed(t, rs.base, rs.a, rs.b)
		})
	}
}

// TestStartSignalLeavesQuantileHedgingAlone: with a trigger that does not read start
// signals, a call against a server that sends them makes the same decisions, in the same
// order, as against one that does not: the signal is information, not a behaviour change.
func TestStartSignalLeavesQuantileHedgingAlone(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			var got [2]string
			for i, cfg := range []QueueConfig{{}, {NoStartSignal: true}} {
				checkGoroutines(t)
				bp := newBlockPrimary()
				srv, base := startConnServer(t, proto, mustQueue(t, bp, cfg))
				var mu sync.Mutex
				var kinds []string
				tr := newTransport(t, Config{Policy: hedgeNow(), Next: base, Observer: func(_ string, e hedge.Event) {
					mu.Lock()
					kinds = append(kinds, fmt.Sprintf("%s#%d", e.Kind, e.Attempt))
					mu.Unlock()
				}})
				resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/?call=1", nil))
				if err != nil {
					t.Fatal(err)
				}
				if b := readAll(t, resp); b != "hedge 1" {
					t.Fatalf("answer %q, want the hedge's", b)
				}
				if !waitFor(5*time.Second, func() bool { return bp.cancelled.Load() == 1 }) {
					t.Fatal("the losing primary never saw its cancellation")
				}
				mu.Lock()
				got[i] = strings.Join(kinds, " ")
				mu.Unlock()
				checkConnsClosed(t, tr, srv) // base's connections, and the hedges' own
			}
			if got[0] != got[1] {
				t.Errorf("events with the signal:    %s\nevents without the signal: %s", got[0], got[1])
			}
			t.Log(got[0])
		})
	}
}

// TestStartSignalWithExpectContinue: a request that waits for 100 Continue before sending its
// body does not ask for the start signal (over HTTP/2, Go's server would then never send the
// 100, see StartSignalHeader), and is answered without waiting out its ExpectContinueTimeout.
// A client that asks anyway over HTTP/1.1 gets the 102 first, keeps waiting, and sends its
// body on the 100 that reading it triggers: there the two 1xx mix well.
func TestStartSignalWithExpectContinue(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("reading the body: %v", err)
				}
				fmt.Fprintf(w, "got %s", b)
			}), QueueConfig{Workers: 1})
			srv, base := startConnServer(t, proto, q)
			base.ExpectContinueTimeout = 5 * time.Second // long: only the server's 100 sends the body
			tr := newTransport(t, Config{Next: base})
			tr.signals = true
			var mu sync.Mutex
			var codes []int
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
					mu.Lock()
					codes = append(codes, code)
					mu.Unlock()
					return nil
				},
			})
			req := mustRequest(t, "PUT", srv.URL, strings.NewReader("payload")).WithContext(ctx)
			req.Header.Set("Expect", "100-continue")
			if proto == "HTTP/1.1" {
				req.Header.Set(StartSignalHeader, "1") // asked by hand: the Transport would not
			}
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if b := readAll(t, resp); b != "got payload" {
				t.Fatalf("answer %q", b)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("the call took %v: the body waited for the Expect timeout, not for 100 Continue", d)
			}
			mu.Lock()
			defer mu.Unlock()
			want := fmt.Sprint([]int{StartedStatus, http.StatusContinue})
			if proto == "HTTP/2" {
				want = fmt.Sprint([]int{http.StatusContinue})
			}
			if fmt.Sprint(codes) != want {
				t.Errorf("1xx responses %v, want %s", codes, want)
			}
			checkConnsClosed(t, tr, srv)
		})
	}
}
