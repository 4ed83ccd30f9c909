package hedgeconfig_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge/hedgehttp"
)

// The README's example file drives a real hedgehttp.Transport: each host and path prefix
// gets its operation's policy and repeatability.
func TestExampleFileDrivesTransport(t *testing.T) {
	checkGoroutines(t)
	f := load(t, "testdata/policy.yaml")
	var searches, payments atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Host == "users.internal" && strings.HasPrefix(r.URL.Path, "/v1/search"):
			searches.Add(1)
			if r.Header.Get(hedgehttp.AttemptHeader) == "" {
				select { // the primary is stuck until it loses
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			io.WriteString(w, "hedge")
		case r.Host == "payments.internal:8443":
			payments.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	defer close(release)

	// Every host name resolves to the test server.
	base := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	defer base.CloseIdleConnections()
	cfg := f.HTTPConfig()
	cfg.Next = base
	tr, err := hedgehttp.NewTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	// A POST to an operation marked idempotent is hedged (after 40ms) and the hedge wins.
	resp, err := client.Post("http://users.internal/v1/search", "text/plain", strings.NewReader("q=ada"))
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); body != "hedge" || searches.Load() != 2 {
		t.Errorf("search: %q after %d attempts, want the hedge's answer after 2", body, searches.Load())
	}
	// An operation marked not idempotent is sent once, even a GET.
	resp, err = client.Get("http://payments.internal:8443/pay")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || payments.Load() != 1 {
		t.Errorf("payments: %d after %d attempts, want 503 after 1", resp.StatusCode, payments.Load())
	}
	for _, url := range []string{"http://users.internal/v1/users/7", "http://elsewhere:9/"} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}

	m := tr.Measured()
	for _, key := range []string{"users.internal/v1/search", "payments.internal:8443", "users.internal", "http://elsewhere:9"} {
		if _, ok := m[key]; !ok {
			t.Errorf("no policy for %q; have %v", key, keys(m))
		}
	}
	if s := m["users.internal/v1/search"]; s.HedgesStarted != 1 || s.HedgesWon != 1 {
		t.Errorf("search policy: %+v", s)
	}
	if s := m["payments.internal:8443"]; s.Breaker != "closed" || s.Limit == 0 {
		t.Errorf("payments policy has no breaker or limit: %+v", s)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// checkGoroutines fails the test when goroutines it started outlive it (after the cleanups
// registered later have run).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
	})
}
