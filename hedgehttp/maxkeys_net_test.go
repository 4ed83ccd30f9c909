package hedgehttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// Once MaxKeys dependencies have policies, a request to another one is sent once, unretried,
// and counted; the dependencies that have policies keep them, and are retried as before.
func TestMaxKeysBoundsThePolicies(t *testing.T) {
	defer checkGoroutines(t)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable) // retriable: every attempt a policy allows is made
	}))
	defer srv.Close()
	tr, err := NewTransport(Config{
		MaxKeys: 2,
		Key:     func(r *http.Request) string { return r.URL.Path },
		Policy:  hedge.Config{Attempts: 2, Backoff: hedge.Backoff{Initial: time.Millisecond, Jitter: hedge.Off}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	defer tr.CloseIdleConnections()
	for _, p := range []string{"/a", "/b", "/c", "/d", "/a"} {
		resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+p, nil))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d, want the server's 503", p, resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"/a": 4, "/b": 2, "/c": 1, "/d": 1}
	for p, n := range want {
		if hits[p] != n {
			t.Errorf("%s reached the server %d times, want %d (all: %v)", p, hits[p], n, hits)
		}
	}
	if n := tr.OverMaxKeys(); n != 2 {
		t.Errorf("OverMaxKeys = %d, want 2 (/c and /d)", n)
	}
	if m := tr.Measured(); len(m) != 2 || tr.Policy("/c") != nil {
		t.Errorf("policies for %d keys (/c has one: %v), want 2: the bound", len(m), tr.Policy("/c") != nil)
	}
}

// Under the default key, the spellings of a host are bounded apart from its policy: a host
// spelt more ways than that bound allows still finds its policy, and no request is counted
// over the bound.
func TestMaxKeysSpellingsFindTheirHost(t *testing.T) {
	defer checkGoroutines(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	tr, err := NewTransport(Config{MaxKeys: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	defer tr.CloseIdleConnections()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	for _, host := range []string{"localhost", "LOCALHOST", "Localhost", "LocalHost", "localHOST"} {
		req := mustRequest(t, "GET", "http://"+host+port+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
	}
	if n := tr.OverMaxKeys(); n != 0 {
		t.Errorf("OverMaxKeys = %d, want 0: every spelling names the one host", n)
	}
	m := tr.Measured()
	if len(m) != 1 || m["http://localhost"+port].Calls != 5 {
		t.Errorf("measured %v, want one host with the 5 calls", m)
	}
}

func TestNegativeMaxKeysIsRefused(t *testing.T) {
	if _, err := NewTransport(Config{MaxKeys: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewTransport(MaxKeys: -1) = %v, want an error wrapping ErrConfig", err)
	}
}

// A request beyond the bound still goes to a replica when Replicas lists some: its URL's host
// may be a name only they resolve. It keeps its Host header, and goes once.
func TestMaxKeysOverTheBoundGoesToAReplica(t *testing.T) {
	defer checkGoroutines(t)
	var mu sync.Mutex
	hosts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts[r.URL.Path+" "+r.Host]++
		mu.Unlock()
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for name, cfg := range map[string]Config{
		"Replicas":      {Replicas: func(string) []string { return []string{addr} }},
		"ReplicaGroups": {ReplicaGroups: func(string) []replica.Group { return []replica.Group{{Addrs: []string{addr}}} }},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.MaxKeys = 1
			cfg.Key = func(r *http.Request) string { return r.URL.Path }
			tr, err := NewTransport(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			defer tr.CloseIdleConnections()
			for _, p := range []string{"/a", "/b"} {
				req := mustRequest(t, "GET", "http://logical.invalid"+p, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				resp.Body.Close()
				if req.URL.Host != "logical.invalid" || req.Host != "logical.invalid" {
					t.Errorf("the caller's request changed: URL host %q, Host %q", req.URL.Host, req.Host)
				}
			}
			if n := tr.OverMaxKeys(); n != 1 {
				t.Errorf("OverMaxKeys = %d, want 1 (/b)", n)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if hosts["/b logical.invalid"] != 2 {
		t.Errorf("requests seen %v, want /b once per subtest, with its Host", hosts)
	}
}
