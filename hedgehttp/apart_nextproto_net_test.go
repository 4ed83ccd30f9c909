package hedgehttp

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Next whose HTTP/2 comes from an upgrade of its own in TLSNextProto (as
// golang.org/x/net/http2.ConfigureTransport installs: one function that puts every connection
// it is handed in one pool) still keeps hedges off their primary's connection: the clone
// for hedges does not hand its connections to that pool. Here the upgrade is net/http's own,
// taken from another Transport, which pools the same way.
func TestHedgeOffPrimaryConnectionWithOwnH2Upgrade(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	primaryAddr := map[string]string{} // call → the primary's client address
	hedgeAddr := map[string]string{}
	arrived := map[string]chan struct{}{} // call → closed once its primary reached the server
	arrival := func(call string) chan struct{} {
		if arrived[call] == nil {
			arrived[call] = make(chan struct{})
		}
		return arrived[call]
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.URL.Query().Get("call")
		primary := r.Header.Get(AttemptHeader) == ""
		mu.Lock()
		if primary {
			primaryAddr[call] = r.RemoteAddr
			close(arrival(call))
		} else {
			hedgeAddr[call] = r.RemoteAddr
		}
		ch := arrival(call)
		mu.Unlock()
		wait := ch // the hedge answers once its primary is in: a win before would cancel it unseen
		if primary {
			wait = nil // the primary is slow: its hedge wins
		}
		select {
		case <-r.Context().Done():
			return
		case <-wait:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, "ok")
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	tlsConfig := s.Client().Transport.(*http.Transport).TLSClientConfig
	pooled := &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true}
	pooled.Clone() // sets up its HTTP/2: its TLSNextProto["h2"] now pools with it
	defer pooled.CloseIdleConnections()
	upgrade := pooled.TLSNextProto["h2"]
	if upgrade == nil {
		t.Fatal("net/http set up no h2 upgrade to borrow")
	}
	var upgrades atomic.Int32
	base := &http.Transport{
		TLSClientConfig: tlsConfig.Clone(),
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{
			"h2": func(authority string, c *tls.Conn) http.RoundTripper {
				upgrades.Add(1)
				return upgrade(authority, c)
			},
		},
	}
	base.TLSClientConfig.NextProtos = []string{"h2", "http/1.1"}
	tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
	const calls = 4
	for i := range calls {
		resp, err := tr.RoundTrip(mustRequest(t, "GET", fmt.Sprintf("%s/?call=%d", s.URL, i), nil))
		if err != nil {
			t.Fatal(err)
		}
		checkProto(t, "HTTP/2", resp)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if upgrades.Load() == 0 {
		t.Fatal("the primaries never used Next's own h2 upgrade: the test does not exercise it")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range calls {
		call := fmt.Sprint(i)
		p, h := primaryAddr[call], hedgeAddr[call]
		if p == "" || h == "" {
			t.Errorf("call %s: primary from %q, hedge from %q; want both", call, p, h)
		} else if p == h {
			t.Errorf("call %s: the hedge rode its primary's connection (%s)", call, p)
		}
	}
	tr.CloseIdleConnections()
}
