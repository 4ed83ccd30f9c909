package hedgehttp

import (
	"context"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// trailerBody sets the request's trailer value when it reaches EOF, as net/http documents
// ("the map values can be updated while the request body is read").
type trailerBody struct {
	r   io.Reader
	req **http.Request
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		(*b.req).Trailer.Set("X-Sum", "abc123")
	}
	return n, err
}
func (b *trailerBody) Close() error { return nil }

func TestTrailerSetWhileBodyIsRead(t *testing.T) {
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		got <- r.Trailer.Get("X-Sum")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := newTransport(t, Config{Next: base, Policy: hedge.Config{Trigger: hedge.After(time.Second)}})
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"plain", base}, {"hedgehttp", tr}} {
		var req *http.Request
		req, _ = http.NewRequest("POST", srv.URL, &trailerBody{r: strings.NewReader("hello"), req: &req})
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Sum": nil}
		resp, err := rt.rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		v := <-got
		t.Logf("%s: server saw trailer X-Sum=%q", rt.name, v)
		if v != "abc123" {
			t.Errorf("%s: trailer set while the body was read was lost: got %q", rt.name, v)
		}
	}
}

// The primary answers 503 at once and then stalls its body; a hedge after 20ms answers 200.
// (the test of the stalled 503 above)
func TestStalledErrorBodyAfterHedgeWon(t *testing.T) {
	for _, mode := range []string{"inline-http1", "goroutine", "inline-honours-wrapper", "http2"} {
		t.Run(mode, func(t *testing.T) {
			var n atomic.Int32
			primaryDone := make(chan struct{})
			proto := "HTTP/1.1"
			if mode == "http2" {
				proto = "HTTP/2"
			}
			srv, base := startServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.WriteHeader(503)
					io.WriteString(w, "partial")
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
					case <-time.After(3 * time.Second):
					}
					close(primaryDone)
					return
				}
				io.WriteString(w, "ok")
			}))
			var next http.RoundTripper = base
			if mode == "goroutine" || mode == "inline-honours-wrapper" {
				next = struct{ http.RoundTripper }{base}
			}
			tr := newTransport(t, Config{Next: next, NextHonoursContext: mode == "inline-honours-wrapper", Policy: hedge.Config{Trigger: hedge.After(20 * time.Millisecond)}})
			// teach the host's protocol (HTTP/1) with a first call
			n.Store(1)
			if resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil)); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			n.Store(0)
			start := time.Now()
			resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil))
			el := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("RoundTrip returned %d %q after %v", resp.StatusCode, b, el.Round(time.Millisecond))
			if el > time.Second {
				t.Errorf("RoundTrip waited %v for the stalled 503 body although a hedge answered 200 after 20ms", el)
			}
			select {
			case <-primaryDone:
				t.Logf("primary request ended %v after start", time.Since(start).Round(time.Millisecond))
				if time.Since(start) > 2*time.Second {
					t.Errorf("losing primary's request was not cancelled; it ran until the server gave up")
				}
			case <-time.After(5 * time.Second):
				t.Error("primary never ended")
			}
		})
	}
}

// After RoundTrip has returned an error, the caller owns its request again; an attempt the
// core started but whose goroutine had not yet run still reads it.
func TestLateAttemptLeavesRequestAlone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	next := struct{ http.RoundTripper }{base} // not *http.Transport: the first attempt on a goroutine
	tr := newTransport(t, Config{Next: next, Policy: hedge.Config{Trigger: hedge.After(time.Second)}})
	for i := 0; i < 3000; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		req.Header.Set("X-A", "1")
		go func() { runtime.Gosched(); cancel() }()
		resp, err := tr.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			continue
		}
		// RoundTrip returned an error: the request is the caller's again.
		req.Header.Set("X-A", "2")
		req.Header.Set("X-B", "3")
	}
}

// A first attempt sent over HTTP/1 on the caller's own request (CancelRequest) whose
// response arrives in the instant its call is decided by a hedge: its body is drained with
// no time bound, on the caller's (never-ending) context.
func TestFirstAttemptLosingAsItAnswers(t *testing.T) {
	type callState struct {
		primIn    chan struct{} // the primary reached the server
		hedgeDone chan struct{}
		primEnded chan time.Duration
	}
	var mu sync.Mutex
	calls := map[string]*callState{}
	get := func(id string) *callState {
		mu.Lock()
		defer mu.Unlock()
		c := calls[id]
		if c == nil {
			c = &callState{primIn: make(chan struct{}), hedgeDone: make(chan struct{}), primEnded: make(chan time.Duration, 1)}
			calls[id] = c
		}
		return c
	}
	var delay time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs := get(r.URL.Query().Get("call"))
		if r.Header.Get(AttemptHeader) != "" {
			// The hedge answers once the primary is on the server: else, on a busy machine,
			// it can win before the primary was sent, whose handler then never runs (and
			// never ends, for the test to wait on).
			select {
			case <-cs.primIn:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "hedge")
			w.(http.Flusher).Flush()
			close(cs.hedgeDone)
			return
		}
		if r.URL.Query().Get("call") == "warm" {
			io.WriteString(w, "x")
			return
		}
		close(cs.primIn)
		select {
		case <-cs.hedgeDone:
		case <-time.After(300 * time.Millisecond):
		}
		mu.Lock()
		d := delay
		mu.Unlock()
		if d > 0 {
			t0 := time.Now()
			for time.Since(t0) < d {
			}
		}
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(200)
		io.WriteString(w, "12345")
		w.(http.Flusher).Flush()
		start := time.Now()
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
		}
		cs.primEnded <- time.Since(start)
	}))
	defer srv.Close()
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	defer base.CloseIdleConnections()
	tr := newTransport(t, Config{Next: base, Policy: hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Off: true}}})
	if resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"?call=warm", nil)); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := 0; i < 60; i++ {
		mu.Lock()
		delay = time.Duration(rand.Intn(300)) * time.Microsecond
		mu.Unlock()
		id := string(rune('a'+i%26)) + time.Now().Format("150405.000000")
		resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"?call="+id, nil))
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 5)
		io.ReadFull(resp.Body, b)
		resp.Body.Close()
		if string(b) != "hedge" {
			<-get(id).primEnded
			continue // the primary won
		}
		if d := <-get(id).primEnded; d > time.Second {
			t.Fatalf("iteration %d: the losing first attempt's request was neither cancelled nor drained for %v (server gave up)", i, d)
		}
	}
}
