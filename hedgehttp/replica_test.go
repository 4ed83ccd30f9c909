package hedgehttp

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/replica"
)

// The breaker protects the dependency: when it has opened (here the one reachable replica
// failed), its half-open trial goes to a replica believed healthy, not to the ejected one
// that refuses connections.
func TestHalfOpenTrialGoesToHealthyReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			if r.URL.Host == "r0:1" {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			if healthy.Load() {
				return textResponse(r, 200, "ok"), nil
			}
			return textResponse(r, 500, "down"), nil
		}}
		var opened, closed atomic.Int32
		tr := newTransport(t, Config{
			Policy: hedge.Config{Budget: emptyBudget, Breaker: &breaker.Config{ConsecutiveFailures: 30, OpenFor: time.Second,
				OnStateChange: func(_, to breaker.State, _ time.Time) {
					switch to {
					case breaker.Open:
						opened.Add(1)
					case breaker.Closed:
						closed.Add(1)
					}
				}}},
			Next:     next,
			Key:      func(*http.Request) string { return "svc" },
			Replicas: func(string) []string { return []string{"r0:1", "r1:1"} },
			// r1's 500s must open the breaker, not eject r1 (which would leave r0 the only
			// replica in service, ejected or not).
			Replica: replica.Config{ConsecutiveFailures: -1},
		})
		get := func() (*http.Response, error) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return resp, err
		}
		// Until r0 is ejected every other primary is refused, and resent to r1: the calls
		// fail only with r1's 500s, which open the breaker.
		for i := 0; opened.Load() == 0; i++ {
			if i == 100 {
				t.Fatal("the breaker never opened on r1's 500s")
			}
			if resp, err := get(); err != nil || resp.StatusCode != 500 {
				t.Fatalf("call %d: %v, %v; want r1's 500", i, resp, err)
			}
		}
		if !tr.Replicas("svc").Set().Ejected(time.Now(), 0) {
			t.Fatal("r0 not ejected after its refusals")
		}
		if _, err := get(); !errors.Is(err, hedge.ErrBreakerOpen) {
			t.Fatalf("call while open: %v; want ErrBreakerOpen", err)
		}
		time.Sleep(time.Second)
		healthy.Store(true)
		before := len(next.requests())
		if resp, err := get(); err != nil || resp.StatusCode != 200 {
			t.Fatalf("trial call: %v, %v", resp, err)
		}
		trial := next.requests()[before:]
		if len(trial) != 1 || !strings.Contains(trial[0].url, "r1:1") {
			t.Fatalf("the trial sent %v; want one request, to r1", trial)
		}
		if closed.Load() != 1 {
			t.Fatal("the breaker did not close after its trial succeeded")
		}
	})
}

// A dial timeout to a dependency without replicas is not resent: the same host would make
// the caller wait as long again. With another replica to try, it is.
func TestDialTimeoutResentOnlyElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timeout := &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutErr{}}
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			if r.URL.Host == "r1:1" {
				return textResponse(r, 200, "ok"), nil
			}
			return nil, timeout
		}}
		tr := newTransport(t, Config{Policy: hedge.Config{Budget: emptyBudget}, Next: next})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		if _, err := tr.RoundTrip(req); !errors.Is(err, timeout.Err) || len(next.requests()) != 1 {
			t.Fatalf("one host: %v after %d requests; want the timeout after one", err, len(next.requests()))
		}
		tr = newTransport(t, Config{Policy: hedge.Config{Budget: emptyBudget}, Next: next,
			Replicas: func(string) []string { return []string{"r0:1", "r1:1"} }})
		for range 10 {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("two replicas: %v; want the timeout resent to r1", err)
			}
			resp.Body.Close()
		}
	})
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
