package hedgehttp

import (
	"context"
	"fmt"
	"io"
	"net"
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

// TestLosingResponseIsDrainedAndItsConnectionReused makes both copies of each call answer
// at the same moment, so the loser's response has arrived by the time the winner is chosen.
// Draining it, rather than cutting it, keeps its connection: the server sees a handful of
// connections for all the calls, not one more per call.
func TestLosingResponseIsDrainedAndItsConnectionReused(t *testing.T) {
	var newConns atomic.Int32
	var mu sync.Mutex
	arrived := map[string]int{}
	release := map[string]chan struct{}{}
	body := strings.Repeat("x", 16<<10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Call")
		mu.Lock()
		ch, ok := release[id]
		if !ok {
			ch = make(chan struct{})
			release[id] = ch
		}
		arrived[id]++
		if arrived[id] == 2 {
			close(ch) // both copies are here: let them answer together
		}
		mu.Unlock()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, body)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	base := &http.Transport{MaxIdleConnsPerHost: 16}
	defer base.CloseIdleConnections()
	tr, err := NewTransport(Config{Next: base, Policy: hedge.Config{
		Trigger: hedge.After(time.Millisecond), Budget: budget.Config{Unlimited: true}}})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 40
	for i := range calls {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL, nil)
		req.Header.Set("X-Call", fmt.Sprint(i))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) != len(body) {
			t.Fatalf("call %d: body of %d bytes, want %d", i, len(b), len(body))
		}
	}
	if m := tr.Measured()[canonicalURL(t, srv.URL)]; m.HedgesStarted != calls {
		t.Fatalf("hedges started %d, want %d (every call hedged)", m.HedgesStarted, calls)
	}
	n := newConns.Load()
	t.Logf("%d calls, each answered by two copies at once: %d connections", calls, n)
	if n > calls/4 {
		t.Errorf("%d new connections for %d calls: losing responses are not drained, their connections are torn down", n, calls)
	}
}
