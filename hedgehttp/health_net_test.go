package hedgehttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// getStatus makes one GET through tr and returns its status, or 0 and the error.
func getStatus(t *testing.T, tr *Transport, url string) (int, error) {
	t.Helper()
	resp, err := tr.RoundTrip(mustRequest(t, "GET", url, nil))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A replica that answers every request with a 5xx is failing, and outlier detection hears
// so: it is ejected, while one answering client errors (4xx) or 501 is not.
func TestFailingAnswersEjectTheirReplica(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		status int
		eject  bool
	}{{http.StatusServiceUnavailable, true}, {http.StatusInternalServerError, true}, {http.StatusNotFound, false}, {http.StatusNotImplemented, false}} {
		bad, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
		}))
		good, _ := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		tr := pairTransport(t, base, bad, good)
		for range 8 {
			if _, err := getStatus(t, tr, good.URL); err != nil {
				t.Fatal(err)
			}
		}
		if got := tr.Replicas("svc").Set().Ejected(time.Now(), 0); got != tc.eject {
			t.Errorf("replica answering %d: ejected %v, want %v", tc.status, got, tc.eject)
		}
		tr.CloseIdleConnections()
	}
}

// pairTransport is a Transport of one attempt per call over two replicas, a and b, taken in
// turn, with outlier detection ejecting after three consecutive failures.
func pairTransport(t *testing.T, base http.RoundTripper, a, b *httptest.Server) *Transport {
	t.Helper()
	addrs := []string{a.Listener.Addr().String(), b.Listener.Addr().String()}
	return newTransport(t, Config{
		Policy:   hedge.Config{Attempts: 1},
		Next:     base,
		Key:      func(*http.Request) string { return "svc" },
		Replicas: func(string) []string { return addrs },
		Replica:  replica.Config{Balancer: replica.RoundRobin, ConsecutiveFailures: 3},
	})
}

// Successes end a replica's run of failures: one that fails every other request is never
// "consecutively" failing, and stays in service.
func TestSuccessesEndARunOfFailures(t *testing.T) {
	checkGoroutines(t)
	var n atomic.Int32
	flaky, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	good, _ := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tr := pairTransport(t, base, flaky, good)
	defer tr.CloseIdleConnections()
	for range 24 {
		if _, err := getStatus(t, tr, good.URL); err != nil {
			t.Fatal(err)
		}
	}
	if n.Load() < 10 {
		t.Fatalf("setup: the flaky replica served %d requests of 24", n.Load())
	}
	if tr.Replicas("svc").Set().Ejected(time.Now(), 0) {
		t.Error("a replica failing every other request was ejected: its successes did not end its runs")
	}
}

// A list of one address is a replica like any other: the request goes there, not to the
// URL's host.
func TestOneReplicaListIsUsed(t *testing.T) {
	checkGoroutines(t)
	srv, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	addrs := []string{srv.Listener.Addr().String()}
	tr := newTransport(t, Config{
		Next:     base,
		Key:      func(*http.Request) string { return "svc" },
		Replicas: func(string) []string { return addrs },
	})
	defer tr.CloseIdleConnections()
	url := "http://" + refusingAddr(t) + "/"
	if code, err := getStatus(t, tr, url); err != nil || code != http.StatusOK {
		t.Fatalf("GET through a one-replica list = %d, %v; want the replica's 200", code, err)
	}
	if p := tr.Replicas("svc"); p == nil || p.Len() != 1 {
		t.Fatal("the one-address list made no Pool")
	}
}

// A request whose body cannot be sent again is sent once: refused by a replica, it fails,
// and is not resent with a body already closed (the server would get it empty).
func TestUnsentRequestWithAnUnreplayableBodyIsNotResent(t *testing.T) {
	checkGoroutines(t)
	const payload = "the one and only body"
	var mu sync.Mutex
	var bodies []string
	srv, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	addrs := []string{refusingAddr(t), srv.Listener.Addr().String()}
	tr := newTransport(t, Config{
		Next:          base,
		Key:           func(*http.Request) string { return "svc" },
		Replicas:      func(string) []string { return addrs },
		Replica:       replica.Config{Balancer: replica.RoundRobin, ConsecutiveUnreachable: -1},
		MaxBodyBuffer: -1, // never buffer: the body is the caller's stream, readable once
	})
	defer tr.CloseIdleConnections()
	var refused int
	for range 6 {
		req := mustRequest(t, "POST", srv.URL, onlyReader{strings.NewReader(payload)})
		resp, err := tr.RoundTrip(req)
		if err != nil {
			if !errors.Is(err, hedge.ErrUnreachable) && !strings.Contains(err.Error(), "refused") {
				t.Fatalf("error %v; want the refusal", err)
			}
			refused++
			continue
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		if b != payload {
			t.Fatalf("the server received body %q; want %q: a request was resent without its body", b, payload)
		}
	}
	if refused != 3 || len(bodies) != 3 {
		t.Fatalf("%d calls refused, %d served; want 3 and 3 (round robin over a refusing and a good replica, nothing resent)", refused, len(bodies))
	}
}

// An ejected share over 100 % is refused when the Transport is built, not by a panic in the
// first request that finds replicas.
func TestReplicaConfigCheckedUpFront(t *testing.T) {
	_, err := NewTransport(Config{Replica: replica.Config{MaxEjectedPercent: 200}})
	if !errors.Is(err, ErrConfig) || !errors.Is(err, replica.ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxEjectedPercent") {
		t.Fatalf("NewTransport(MaxEjectedPercent 200) = %v; want an ErrConfig naming the field", err)
	}
	// Should the replica package refuse a configuration for a pool that it took for one
	// replica, the request fails with the reason; it does not panic.
	h := &host{name: "svc"}
	p, err := h.poolFor([]string{"a:1", "b:1"}, replica.Config{MaxEjectedPercent: 200})
	if p != nil || !errors.Is(err, ErrConfig) || !errors.Is(err, replica.ErrInvalidConfig) {
		t.Fatalf("poolFor with an invalid Config = %v, %v; want no pool and an ErrConfig", p, err)
	}
}
