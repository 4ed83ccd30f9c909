package hedgehttp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// slowPrimary answers "primary" after 30ms and a copy at once with "hedge", counting the
// requests of each call (its query's call) and any TriggerHeader that reached it. The primary
// of a call that the test wants its hedge to win (the query says lose) never answers: on a
// busy machine a hedge due after a few milliseconds may reach the server after 30ms, and
// lose to a primary the test meant to be slow.
func slowPrimary(requests *callCounts, leaked *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.add(r.URL.Query().Get("call"))
		if r.Header.Get(TriggerHeader) != "" {
			leaked.Add(1)
		}
		if r.Header.Get(AttemptHeader) == "" {
			var answer <-chan time.Time // nil: never
			if r.URL.Query().Get("lose") == "" {
				answer = time.After(30 * time.Millisecond)
			}
			select {
			case <-answer:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "primary")
			return
		}
		io.WriteString(w, "hedge")
	})
}

// slowPrimaryURL is the address of call to a slowPrimary server: its primary answers, or,
// when the test wants the hedge's answer, never does.
func slowPrimaryURL(srv string, call int, want string) string {
	u := srv + "?call=" + strconv.Itoa(call)
	if want == "hedge" {
		u += "&lose=1"
	}
	return u
}

// callCounts counts the requests of each call that reached a server. A call's loser may
// reach it after the call has returned (or never, cancelled before it was sent): counted by
// call, it never counts as the next call's.
type callCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounts) add(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[call]++
}

func (c *callCounts) of(call int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[strconv.Itoa(call)]
}

// The Hedge-Trigger header sets one request's trigger and never reaches the server.
func TestTriggerHeader(t *testing.T) {
	checkGoroutines(t)
	var requests callCounts
	var leaked atomic.Int32
	srv, next := startServer(t, "HTTP/1.1", slowPrimary(&requests, &leaked))
	tr, err := NewTransport(Config{Next: next, Policy: hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Ratio: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	call := 0
	get := func(trigger, want string) (string, error) {
		call++
		req, _ := http.NewRequest(http.MethodGet, slowPrimaryURL(srv.URL, call, want), nil)
		if trigger != "" {
			req.Header.Set(TriggerHeader, trigger)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, tc := range []struct{ header, want string }{
		{"", "hedge"},
		{"none", "primary"},
		{"off", "primary"},
		{"after 1h", "primary"},
		{"after 1ms", "hedge"},
	} {
		if got, err := get(tc.header, tc.want); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.header, got, err, tc.want)
		}
		if n := requests.of(call); tc.want == "primary" && n != 1 {
			t.Errorf("%s: %d requests reached the server, want 1", tc.header, n)
		}
	}
	if leaked.Load() != 0 {
		t.Errorf("the server saw %s on %d requests", TriggerHeader, leaked.Load())
	}
	for _, bad := range []string{"quantil 0.9", "after soon", "tied", "start-aware 0.95"} {
		if _, err := get(bad, ""); !errors.Is(err, ErrTriggerHeader) {
			t.Errorf("%q: %v, want ErrTriggerHeader", bad, err)
		}
	}
}

// Refresh gives a host whose configuration changed a new policy, and keeps the policy of a
// host whose configuration is the same.
func TestRefresh(t *testing.T) {
	checkGoroutines(t)
	var requests callCounts
	var leaked atomic.Int32
	srv, next := startServer(t, "HTTP/1.1", slowPrimary(&requests, &leaked))
	var mu sync.Mutex
	cfg := hedge.Config{}
	tr, err := NewTransport(Config{Next: next, PolicyFor: func(string) (hedge.Config, hedge.Repeatability) {
		mu.Lock()
		defer mu.Unlock()
		return cfg, hedge.RepeatableDefault
	}})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	call := 0
	get := func(want string) string {
		call++
		resp, err := client.Get(slowPrimaryURL(srv.URL, call, want))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get("primary"); got != "primary" {
		t.Fatalf("without a trigger: %q", got)
	}
	key := "http://" + srv.Listener.Addr().String()
	first := tr.Policy(key)
	if err := tr.Refresh(); err != nil || tr.Policy(key) != first {
		t.Errorf("Refresh without a change: %v, policy replaced %v", err, tr.Policy(key) != first)
	}
	mu.Lock()
	cfg = hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Ratio: 1}}
	mu.Unlock()
	if err := tr.Refresh(); err != nil || tr.Policy(key) == first {
		t.Fatalf("Refresh after a change: %v, policy replaced %v", err, tr.Policy(key) != first)
	}
	if got := get("hedge"); got != "hedge" {
		t.Errorf("after the change: %q, want the hedge's answer", got)
	}
	mu.Lock()
	cfg = hedge.Config{Attempts: -1}
	mu.Unlock()
	kept := tr.Policy(key)
	if err := tr.Refresh(); !errors.Is(err, ErrConfig) || tr.Policy(key) != kept {
		t.Errorf("Refresh to an invalid configuration: %v, policy kept %v", err, tr.Policy(key) == kept)
	}
}

// A caller's own Hedge-Attempt header (a proxy forwarding its client's headers) does not mark
// the call's first attempt as a copy, over either protocol and whichever way the first
// attempt is sent, and the caller's request keeps it.
func TestCallersAttemptHeaderDropped(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var seen sync.Map
			srv, next := startServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Store(r.Header.Get(AttemptHeader), true)
				io.WriteString(w, "ok")
			}))
			tr, err := NewTransport(Config{Next: next, Policy: hedge.Config{Trigger: hedge.After(time.Hour)}})
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for i := range 3 { // the first call learns the protocol; the next go the short way over HTTP/1
				req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
				req.Header.Set(AttemptHeader, "1")
				if i == 2 {
					req.Header.Set(TriggerHeader, "after 1h") // both headers at once
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if req.Header.Get(AttemptHeader) != "1" {
					t.Fatal("RoundTrip removed the header from the caller's request")
				}
			}
			seen.Range(func(k, _ any) bool {
				if k != "" {
					t.Errorf("a first attempt reached the server with %s: %v", AttemptHeader, k)
				}
				return true
			})
		})
	}
}
