package hedgehttp

import (
	"crypto/tls"
	"io"
	"log"
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

// HTTPS replicas are asked for, and checked against, the dependency's name, not their own
// address: a certificate issued to the service (httptest's covers example.com, 127.0.0.1
// and ::1, not localhost) passes at replicas addressed as localhost:port. Before, net/http
// checked it against "localhost" and every request failed. A hedge's loser is still
// cancelled when the first attempt would have run on the caller's goroutine.
func TestReplicasOverHTTPSCheckTheDependencysName(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var mu sync.Mutex
			names := map[string]int{}
			var lost, lostCancelled atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				names[r.TLS.ServerName+" "+r.Host]++
				mu.Unlock()
				if r.URL.Path == "/slow-first" && r.Header.Get(AttemptHeader) == "" {
					lost.Add(1)
					select {
					case <-r.Context().Done():
						lostCancelled.Add(1)
					case <-time.After(5 * time.Second):
					}
					return
				}
				io.WriteString(w, "ok")
			})
			var addrs []string
			var base *http.Transport
			for range 2 {
				s := httptest.NewUnstartedServer(h)
				s.Config.ErrorLog = log.New(io.Discard, "", 0)
				s.EnableHTTP2 = proto == "HTTP/2"
				s.StartTLS()
				t.Cleanup(s.Close)
				addrs = append(addrs, "localhost"+s.URL[strings.LastIndexByte(s.URL, ':'):])
				base = s.Client().Transport.(*http.Transport) // the same test certificate for both
			}
			next := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: base.TLSClientConfig.RootCAs}, ForceAttemptHTTP2: proto == "HTTP/2"}
			defer next.CloseIdleConnections()
			tr, err := NewTransport(Config{
				Next:     next,
				Replicas: func(string) []string { return addrs },
				Policy:   hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Off: true}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for range 8 {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", "https://example.com/", nil))
				if err != nil {
					t.Fatalf("a request to HTTPS replicas: %v", err)
				}
				checkProto(t, proto, resp)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			resp, err := tr.RoundTrip(mustRequest(t, "GET", "https://example.com/slow-first", nil))
			if err != nil {
				t.Fatalf("a hedged request: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "ok" {
				t.Fatalf("hedged request's body %q, want the hedge's ok", body)
			}
			if !waitFor(5*time.Second, func() bool { return lostCancelled.Load() == lost.Load() }) || lost.Load() != 1 {
				t.Errorf("%d first attempts lost, %d of them cancelled; want the one, cancelled", lost.Load(), lostCancelled.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			for k, n := range names {
				if k != "example.com example.com" {
					t.Errorf("%d requests asked for %q (SNI, then Host); want example.com for both", n, k)
				}
			}
		})
	}
}

// A Next that names the server itself keeps its name: the Transport does not clone it.
func TestReplicasOverHTTPSKeepNextsServerName(t *testing.T) {
	next := &http.Transport{TLSClientConfig: &tls.Config{ServerName: "own.example"}}
	tr, err := NewTransport(Config{Next: next, Replicas: func(string) []string { return []string{"localhost:1"} }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, ok := tr.replicaTLS("example.com", "localhost:1"); ok {
		t.Fatal("a Next with a ServerName of its own was cloned to check another name")
	}
	tr2, err := NewTransport(Config{Next: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	n, ok := tr2.replicaTLS("example.com:443", "10.0.0.1:443")
	if !ok || n.next.TLSClientConfig.ServerName != "example.com" || !n.next.ForceAttemptHTTP2 {
		t.Fatalf("clone for example.com: %v, %+v; want ServerName example.com, HTTP/2 kept on", ok, n)
	}
	if _, ok := tr2.replicaTLS("Example.COM", "example.com:8443"); ok {
		t.Fatal("names that agree (but for case and port) need no clone")
	}
}

// The load streams of HTTPS replicas check the dependency's name too, as its requests do.
func TestLoadStreamsOfHTTPSReplicasCheckTheDependencysName(t *testing.T) {
	checkGoroutines(t)
	seen := watchReports(t)
	a, base := startStreamServer(t, "HTTP/2", 1, 5*time.Millisecond)
	b, _ := startStreamServer(t, "HTTP/2", 1, 5*time.Millisecond)
	var addrs []string
	for _, s := range []*streamServer{a, b} {
		addrs = append(addrs, "localhost"+s.srv.URL[strings.LastIndexByte(s.srv.URL, ':'):])
	}
	tr, err := NewTransport(Config{
		Next:               base,
		Replicas:           func(string) []string { return addrs },
		LoadReportInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	getOK(t, &http.Client{Transport: tr}, "https://example.com/")
	if !waitFor(5*time.Second, func() bool {
		_, na := seen.get(addrs[0])
		_, nb := seen.get(addrs[1])
		return na >= 3 && nb >= 3
	}) {
		t.Fatalf("stream reports: %v, want 3 from each of %v", seen.n, addrs)
	}
}
