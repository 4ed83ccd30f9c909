package hedgehttp

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// PolicyFor gives each key its own policy and repeatability: a failing POST to an operation
// declared repeatable is retried, a failing GET to one declared not repeatable is sent once,
// and an invalid configuration fails only its own key's requests.
func TestPolicyForPerKey(t *testing.T) {
	checkGoroutines(t)
	var seen [3]atomic.Int32
	srv, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/idempotent":
			seen[0].Add(1)
		case "/once":
			seen[1].Add(1)
		default:
			seen[2].Add(1)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	retrying := hedge.Config{Attempts: 3, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Initial: time.Microsecond, Jitter: -1}}
	var asked atomic.Int32
	tr := newTransport(t, Config{
		Next: base,
		Key:  func(r *http.Request) string { return r.URL.Path },
		PolicyFor: func(key string) (hedge.Config, hedge.Repeatability) {
			asked.Add(1)
			switch key {
			case "/idempotent":
				return retrying, hedge.Repeatable
			case "/once":
				return retrying, hedge.NotRepeatable
			}
			return hedge.Config{Attempts: -1}, hedge.RepeatableDefault
		},
	})
	for range 2 {
		resp, err := tr.RoundTrip(mustRequest(t, "POST", srv.URL+"/idempotent", strings.NewReader("x")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := seen[0].Load(); n != 6 {
		t.Errorf("a failing POST to a repeatable operation was sent %d times in two calls, want 3 each", n)
	}
	resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/once", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := seen[1].Load(); n != 1 {
		t.Errorf("a failing GET to a not-repeatable operation was sent %d times, want 1", n)
	}
	// The caller's own word still wins over the operation's.
	resp, err = tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/once", nil).WithContext(hedge.WithRepeatable(t.Context(), true)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := seen[1].Load(); n != 4 {
		t.Errorf("a GET the caller marked repeatable was sent %d times, want 3", n-1)
	}
	_, err = tr.RoundTrip(mustRequest(t, "GET", srv.URL+"/bad", nil))
	if !errors.Is(err, ErrConfig) || !errors.Is(err, hedge.ErrInvalidConfig) || !strings.Contains(err.Error(), `"/bad"`) {
		t.Errorf("a request to a key with an invalid policy: %v", err)
	}
	if seen[2].Load() != 0 {
		t.Error("a request to a key with an invalid policy reached the server")
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("PolicyFor was asked %d times, want once per key (3)", n)
	}
}
