package hedgehttp

import (
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// A request built by hand, with no Host, keeps the URL's host as its Host header when
// Replicas sends it to a replica's address: a server that answers by virtual host gets the
// name the caller called, on the first attempt and on its hedge alike.
func TestReplicasKeepTheHostOfARequestWithoutOne(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var mu sync.Mutex
			var hosts []string
			var once sync.Once
			primaryIn := make(chan struct{})
			srv, base, _ := startCountingServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hosts = append(hosts, r.Host)
				mu.Unlock()
				if r.Header.Get(AttemptHeader) == "" {
					once.Do(func() { close(primaryIn) })
					select { // the first attempt is slow enough to be hedged
					case <-time.After(5 * time.Second):
					case <-r.Context().Done():
					}
				} else {
					select { // the hedge wins once its primary is on the server
					case <-primaryIn:
					case <-time.After(5 * time.Second):
					}
				}
				io.WriteString(w, "ok")
			}))
			addr := srv.Listener.Addr().String()
			other, _, _ := startCountingServer(t, proto, srv.Config.Handler)
			addrs := []string{addr, other.Listener.Addr().String()}
			tr := newTransport(t, Config{
				Policy:   hedgeNow(),
				Next:     base,
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(string) []string { return addrs },
			})
			scheme := "http"
			if proto == "HTTP/2" {
				scheme = "https"
			}
			const name = "svc.example.com:8443" // over HTTPS, a name the test certificate covers (*.example.com): replicas are checked against it
			req := &http.Request{Method: "GET", URL: &url.URL{Scheme: scheme, Host: name, Path: "/"}, Header: http.Header{}}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if req.Host != "" || req.URL.Host != name {
				t.Errorf("the caller's request changed: Host %q, URL host %q", req.Host, req.URL.Host)
			}
			waitFor(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(hosts) >= 2 })
			mu.Lock()
			defer mu.Unlock()
			if len(hosts) < 2 {
				t.Fatalf("servers saw %d attempts, want the first attempt and its hedge", len(hosts))
			}
			for i, h := range hosts {
				if h != name {
					t.Errorf("attempt %d reached the server with Host %q, want %q", i, h, name)
				}
			}
		})
	}
}
