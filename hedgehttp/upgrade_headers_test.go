package hedgehttp

import (
	"errors"
	"net/http"
	"sync"
	"testing"
)

// An Upgrade request goes straight to Next (nothing to race), but the headers meant for the
// Transport go no further, as on any other request: the server never sees the trigger
// header or a caller's attempt mark, and an invalid trigger header fails the request.
func TestUpgradeRequestKeepsTheTransportsHeaders(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	var seen []http.Header
	srv, base := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusBadRequest) // refuse the upgrade
	}))
	tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
	upgrade := func(trigger string) *http.Request {
		req := mustRequest(t, "GET", srv.URL+"/ws", nil)
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set(TriggerHeader, trigger)
		req.Header.Set(AttemptHeader, "2")
		return req
	}
	if _, err := tr.RoundTrip(upgrade("bogus value")); !errors.Is(err, ErrTriggerHeader) {
		t.Errorf("an Upgrade request with an invalid trigger header: %v, want an error wrapping ErrTriggerHeader", err)
	}
	req := upgrade("none")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("the server saw %d requests, want 1 (the invalid one is not sent)", len(seen))
	}
	for _, k := range []string{TriggerHeader, AttemptHeader} {
		if v, ok := seen[0][k]; ok {
			t.Errorf("the server saw %s: %q on an Upgrade request", k, v)
		}
	}
	if req.Header.Get(TriggerHeader) != "none" || req.Header.Get(AttemptHeader) != "2" {
		t.Errorf("the caller's request was modified: %v", req.Header)
	}
}
