package hedgehttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// These tests run the Transport against real loopback servers, over HTTP/1.1 and HTTP/2.
// None asserts on timing: a slow primary blocks on a channel the test controls (or on its
// own cancellation), the hedge fires after a small fixed delay (hedge.After), and every
// wait is bounded.

// hedgeNow is a policy that hedges every call after a millisecond, with no budget, so a
// test decides with its server which attempt is slow.
func hedgeNow() hedge.Config {
	return hedge.Config{
		Trigger: hedge.After(time.Millisecond),
		Budget:  budget.Config{Off: true},
	}
}

func newTransport(t testing.TB, cfg Config) *Transport {
	t.Helper()
	tr, err := NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// blockPrimary answers hedged attempts with "hedge <n>" and blocks the first attempt until
// its request context is done (it lost and was cancelled) or release is closed, when it
// answers "primary". A hedge answers only once its call's primary has reached the handler
// (calls are told apart by the "call" query parameter), so that the primary's whole request
// is on the server before it loses. It records what it saw.
type blockPrimary struct {
	release   chan struct{}
	started   atomic.Int32 // primaries that reached the handler
	cancelled atomic.Int32 // primaries that saw their context done
	count     atomic.Int32 // requests of any kind
	arrived   sync.Map     // call → chan struct{}, closed when its primary arrives
	mu        sync.Mutex
	bodies    []string // request bodies, in arrival order
}

func newBlockPrimary() *blockPrimary { return &blockPrimary{release: make(chan struct{})} }

func (s *blockPrimary) arrival(call string) chan struct{} {
	ch, _ := s.arrived.LoadOrStore(call, make(chan struct{}))
	return ch.(chan struct{})
}

func (s *blockPrimary) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count.Add(1)
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	call := r.URL.Query().Get("call")
	if n := r.Header.Get(AttemptHeader); n != "" {
		select {
		case <-s.arrival(call):
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		fmt.Fprintf(w, "hedge %s", n)
		return
	}
	s.started.Add(1)
	close(s.arrival(call))
	select {
	case <-s.release:
		io.WriteString(w, "primary")
	case <-r.Context().Done():
		s.cancelled.Add(1)
	case <-time.After(10 * time.Second): // a bound, never reached when the test passes
	}
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

// The first call to a host learns its protocol; the calls after it send their first attempt
// on the attempt's own context (see call.attempt). Both are checked.
func TestHedgeBeatsSlowPrimary(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			s := newBlockPrimary()
			srv, base := startServer(t, proto, s)
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
			client := &http.Client{Transport: tr}
			const calls = 2
			for i := range calls {
				resp, err := client.Get(fmt.Sprintf("%s/x?call=%d", srv.URL, i))
				if err != nil {
					t.Fatal(err)
				}
				checkProto(t, proto, resp)
				if resp.Request == nil || resp.Request.Header.Get(AttemptHeader) != "" || resp.Request.URL.Path != "/x" {
					t.Errorf("call %d: resp.Request = %+v, want the caller's own request", i, resp.Request)
				}
				if got := readAll(t, resp); got != "hedge 1" {
					t.Errorf("call %d: body = %q, want the hedge's answer %q", i, got, "hedge 1")
				}
				if !waitFor(5*time.Second, func() bool { return s.cancelled.Load() == int32(i+1) }) {
					t.Errorf("call %d: the losing primary was not cancelled on the server", i)
				}
			}
			m := tr.Measured()[canonicalURL(t, srv.URL)]
			if m.Calls != calls || m.HedgesStarted != calls || m.HedgesWon != calls {
				t.Errorf("Measured = %+v, want %d calls, each with a hedge started and won", m, calls)
			}
		})
	}
}

// canonicalURL is the default key of a server URL.
func canonicalURL(t testing.TB, u string) string {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return canonicalName(req)
}

// suppressedOnce returns an observer that signals each HedgeSuppressed event's reason.
func suppressedOnce() (func(string, hedge.Event), chan hedge.Reason) {
	ch := make(chan hedge.Reason, 16)
	return func(_ string, e hedge.Event) {
		if e.Kind == hedge.HedgeSuppressed {
			ch <- e.Reason
		}
	}, ch
}

func TestPOSTWithoutKeySentOnce(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			s := newBlockPrimary()
			srv, base := startServer(t, proto, s)
			obs, reasons := suppressedOnce()
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base, Observer: obs})
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := tr.RoundTrip(mustRequest(t, "POST", srv.URL, strings.NewReader("payload")))
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			// The hedge is due after 1ms and is refused; only then is the primary let go.
			select {
			case r := <-reasons:
				if r != hedge.ReasonNotRepeatable {
					t.Errorf("hedge suppressed for %v, want %v", r, hedge.ReasonNotRepeatable)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the hedge was never considered")
			}
			close(s.release)
			resp := <-done
			if resp == nil {
				return
			}
			if got := readAll(t, resp); got != "primary" {
				t.Errorf("body = %q, want %q", got, "primary")
			}
			if n := s.count.Load(); n != 1 {
				t.Errorf("the server saw the POST %d times, want exactly 1", n)
			}
			if s.bodies[0] != "payload" {
				t.Errorf("server got body %q, want %q", s.bodies[0], "payload")
			}
		})
	}
}

func mustRequest(t testing.TB, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// onlyReader hides every method but Read, so that http.NewRequest sets no GetBody and the
// Transport must buffer the body itself.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestPOSTWithIdempotencyKeyHedged(t *testing.T) {
	payload := strings.Repeat("0123456789", 1000)
	for _, proto := range protos {
		for _, getBody := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/GetBody=%v", proto, getBody), func(t *testing.T) {
				checkGoroutines(t)
				s := newBlockPrimary()
				srv, base := startServer(t, proto, s)
				tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
				var body io.Reader = strings.NewReader(payload)
				if !getBody {
					body = onlyReader{body}
				}
				req := mustRequest(t, "POST", srv.URL, body)
				if (req.GetBody != nil) != getBody {
					t.Fatalf("GetBody set = %v, want %v", req.GetBody != nil, getBody)
				}
				req.Header.Set("Idempotency-Key", "k-1")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, resp); got != "hedge 1" {
					t.Errorf("body = %q, want %q", got, "hedge 1")
				}
				if !waitFor(5*time.Second, func() bool { return s.count.Load() == 2 && s.cancelled.Load() == 1 }) {
					t.Fatalf("server saw %d requests, %d cancelled; want 2 and 1", s.count.Load(), s.cancelled.Load())
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				for i, b := range s.bodies {
					if b != payload {
						t.Errorf("copy %d carried %d bytes, want the same %d bytes as the original", i, len(b), len(payload))
					}
				}
			})
		}
	}
}

func TestFast503DoesNotWin(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			release := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(AttemptHeader) != "" {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				select {
				case <-release:
					io.WriteString(w, "slow 200")
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			srv, base := startServer(t, proto, h)
			failed := make(chan struct{})
			var once sync.Once
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base, Observer: func(_ string, e hedge.Event) {
				if e.Kind == hedge.AttemptFinished && e.Attempt == 1 && e.Err != nil {
					once.Do(func() { close(failed) })
				}
			}})
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil))
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			select {
			case <-failed: // the 503 came back first, and did not end the call
			case <-time.After(10 * time.Second):
				t.Fatal("the hedge never failed")
			}
			close(release)
			resp := <-done
			if resp == nil {
				return
			}
			if resp.StatusCode != 200 {
				t.Errorf("status = %d, want the slow 200", resp.StatusCode)
			}
			if got := readAll(t, resp); got != "slow 200" {
				t.Errorf("body = %q, want %q", got, "slow 200")
			}
		})
	}
}

func TestAllFailedReturnsLastResponse(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var n atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := n.Add(1)
				if r.URL.Path == "/missing" {
					http.Error(w, "no such thing", http.StatusNotFound)
					return
				}
				http.Error(w, fmt.Sprintf("down %d", i), http.StatusBadGateway)
			})
			srv, base := startServer(t, proto, h)
			pc := hedgeNow()
			pc.Trigger = hedge.Trigger{} // retries only: 2 sequential attempts
			pc.Attempts = 2
			pc.Backoff = hedge.Backoff{Initial: time.Microsecond}
			tr := newTransport(t, Config{Policy: pc, Next: base})
			resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/", nil))
			if err != nil {
				t.Fatalf("RoundTrip: %v; want the last 502 response, not an error", err)
			}
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("status = %d, want 502", resp.StatusCode)
			}
			if got := readAll(t, resp); got != "down 2\n" {
				t.Errorf("body = %q, want the retry's answer %q", got, "down 2\n")
			}
			// A 404 is final: sent once, returned as is.
			resp, err = tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/missing", nil))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusNotFound || readAll(t, resp) != "no such thing\n" || n.Load() != 3 {
				t.Errorf("404: status %d, server calls %d; want 404 with its body, sent once", resp.StatusCode, n.Load())
			}
		})
	}
}

func TestHedgeGoesToAnotherReplica(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			type hit struct {
				replica int
				attempt string
				call    string
			}
			var mu sync.Mutex
			var hits []hit
			bp := newBlockPrimary()
			handler := func(replica int) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					hits = append(hits, hit{replica, r.Header.Get(AttemptHeader), r.URL.Query().Get("call")})
					mu.Unlock()
					bp.ServeHTTP(w, r) // the primary is slow wherever it lands
				})
			}
			srvA, base := startServer(t, proto, handler(0))
			srvB, _ := startServer(t, proto, handler(1))
			// One client transport for both: the two servers share httptest's certificate.
			addrs := []string{srvA.Listener.Addr().String(), srvB.Listener.Addr().String()}
			tr := newTransport(t, Config{
				Policy:   hedgeNow(),
				Next:     base,
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(key string) []string { return addrs },
			})
			const calls = 16
			for i := range calls {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", fmt.Sprintf("%s/?call=%d", srvA.URL, i), nil))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
			}
			mu.Lock()
			defer mu.Unlock()
			where := map[string][2]int{} // call → replica of attempt 0, replica of attempt 1
			seen := map[int]bool{}
			for _, h := range hits {
				w := where[h.call]
				if h.attempt == "" {
					w[0] = h.replica + 1
				} else {
					w[1] = h.replica + 1
				}
				where[h.call] = w
				seen[h.replica] = true
			}
			if len(where) != calls {
				t.Fatalf("%d calls reached the servers, want %d", len(where), calls)
			}
			for c, w := range where {
				if w[0] == 0 || w[1] == 0 || w[0] == w[1] {
					t.Errorf("call %s: primary on replica %d, hedge on %d (1-based; 0 = missing); want two different replicas", c, w[0], w[1])
				}
			}
			if len(seen) != 2 {
				t.Errorf("traffic reached replicas %v, want both", seen)
			}
			if m := tr.Measured(); len(m) != 1 || m["svc"].Calls != calls {
				t.Errorf("Measured = %v, want one host \"svc\" with %d calls", m, calls)
			}
		})
	}
}

func TestWinnerBodyOutlivesRoundTrip(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			more := make(chan struct{})
			serverSawCancel := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "first part;")
				w.(http.Flusher).Flush()
				select {
				case <-more:
				case <-time.After(10 * time.Second):
					return
				}
				io.WriteString(w, "second part;")
				w.(http.Flusher).Flush()
				if r.URL.Path == "/stream" { // keeps streaming until the client closes the body
					select {
					case <-r.Context().Done():
						close(serverSawCancel)
					case <-time.After(10 * time.Second):
					}
				}
			})
			srv, base := startServer(t, proto, h)
			pc := hedgeNow()
			pc.Trigger = hedge.After(time.Hour) // never hedge: the primary wins
			tr := newTransport(t, Config{Policy: pc, Next: base})
			resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/", nil))
			if err != nil {
				t.Fatal(err)
			}
			// RoundTrip has returned: the body must still be readable on the winner's context.
			buf := make([]byte, len("first part;"))
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				t.Fatal(err)
			}
			close(more)
			if got := readAll(t, resp); got != "second part;" {
				t.Errorf("rest of body = %q, want %q", got, "second part;")
			}

			// Closing the body early cancels the winner's attempt, which the server sees.
			more = make(chan struct{})
			close(more)
			resp, err = tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/stream", nil))
			if err != nil {
				t.Fatal(err)
			}
			io.ReadFull(resp.Body, buf)
			resp.Body.Close()
			select {
			case <-serverSawCancel:
			case <-time.After(10 * time.Second):
				t.Error("closing the body did not cancel the request on the server")
			}
		})
	}
}

func TestCallerCancelStopsEveryAttempt(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var started, cancelled atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				started.Add(1)
				select {
				case <-r.Context().Done():
					cancelled.Add(1)
				case <-time.After(10 * time.Second):
				}
			})
			srv, base := startServer(t, proto, h)
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
			// Twice: the first call learns the host's protocol, the second sends its first
			// attempt on the attempt's own context.
			for i := range int32(2) {
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
					_, err := tr.RoundTrip(req)
					errc <- err
				}()
				if !waitFor(5*time.Second, func() bool { return started.Load() == 2*(i+1) }) {
					t.Fatalf("call %d: %d attempts reached the server, want 2", i, started.Load()-2*i)
				}
				cancel()
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Errorf("call %d: RoundTrip = %v, want context.Canceled", i, err)
				}
				if !waitFor(5*time.Second, func() bool { return cancelled.Load() == 2*(i+1) }) {
					t.Errorf("call %d: %d attempts saw the cancellation on the server, want 2", i, cancelled.Load()-2*i)
				}
			}
		})
	}
}

// TestNoLeaksAfterManyHedgedCalls makes 10,000 calls that all hedge (the primary blocks until
// cancelled) and checks that no goroutine and no server connection is left over.
func TestNoLeaksAfterManyHedgedCalls(t *testing.T) {
	calls := 10000
	if testing.Short() || raceEnabled {
		calls = 2000 // the race detector slows loopback I/O several times over
	}
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			s := newBlockPrimary()
			var open, conns atomic.Int64
			srv := httptest.NewUnstartedServer(s)
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				switch st {
				case http.StateNew:
					open.Add(1)
					conns.Add(1)
				case http.StateClosed, http.StateHijacked:
					open.Add(-1)
				}
			}
			var base *http.Transport
			if proto == "HTTP/2" {
				srv.EnableHTTP2 = true
				srv.StartTLS()
				base = &http.Transport{
					TLSClientConfig:   srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone(),
					ForceAttemptHTTP2: true,
				}
			} else {
				srv.Start()
				base = &http.Transport{}
			}
			base.MaxIdleConnsPerHost = 16
			defer srv.Close()
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})

			const workers = 32
			var wg sync.WaitGroup
			var failures atomic.Int32
			next := make(chan int, calls)
			for i := range calls {
				next <- i
			}
			close(next)
			deadline := time.Now().Add(60 * time.Second)
			for range workers {
				wg.Go(func() {
					for i := range next {
						if time.Now().After(deadline) {
							failures.Add(1)
							return
						}
						resp, err := tr.RoundTrip(mustRequest(t, "GET", fmt.Sprintf("%s/?call=%d", srv.URL, i), nil))
						if err != nil {
							failures.Add(1)
							continue
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if !bytes.HasPrefix(b, []byte("hedge")) {
							failures.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n := failures.Load(); n > 0 {
				t.Fatalf("%d of %d calls failed or were not won by the hedge", n, calls)
			}
			// Each losing primary here is stuck until cancelled: over HTTP/1.1 that costs its
			// connection (the protocol has no other way to abort a request), over HTTP/2 a
			// stream reset.
			t.Logf("%d calls whose primary is stuck until cancelled: %d new connections", calls, conns.Load())
			m := tr.Measured()[canonicalURL(t, srv.URL)]
			if m.HedgesWon != int64(calls) {
				t.Errorf("hedges won = %d, want %d", m.HedgesWon, calls)
			}
			// Every losing primary is cancelled on the server...
			if !waitFor(10*time.Second, func() bool { return s.cancelled.Load() == int32(calls) }) {
				t.Errorf("%d of %d losing primaries saw their cancellation", s.cancelled.Load(), calls)
			}
			if n := s.count.Load(); n != 2*int32(calls) {
				t.Errorf("the server saw %d requests, want %d", n, 2*calls)
			}
			// ...and once the client's idle connections are closed, no connection is left.
			// (Next's and the hedges' own, more than once: a connection whose body was just
			// closed may reach the idle pool a moment later.)
			if !waitFor(10*time.Second, func() bool { tr.CloseIdleConnections(); return open.Load() == 0 }) {
				t.Errorf("%d server connections still open", open.Load())
			}
		})
	}
}
