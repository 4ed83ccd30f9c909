//go:build !race

package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestInlineCallAllocatesNoMoreThanTheCore: a call whose first attempt is sent on the
// caller's goroutine and answers before its hedge is due allocates no more than the least
// adapter over hedge.DoInlineDetached does (coreInline: a closure, the request on the
// attempt's context, a body that releases it), whatever the core itself allocates: the
// Transport's per-host policy, classification and body handling cost it nothing on the heap
// beyond that. (Not under -race, whose sync.Pool drops the core's pooled state machines.)
func TestInlineCallAllocatesNoMoreThanTheCore(t *testing.T) {
	policy := hedge.Config{Trigger: hedge.After(time.Hour)}
	tr := newTransport(t, Config{Policy: policy, Next: bodyNext{}, NextHonoursContext: true})
	floor := coreInline{p: hedge.MustNew(policy), next: bodyNext{}}
	call := roundTripOK(t, "http://svc.test/")
	call(tr)() // the host, its policy, its protocol
	call(floor)()
	got := testing.AllocsPerRun(200, call(tr))
	want := testing.AllocsPerRun(200, call(floor))
	if got > want {
		t.Errorf("a call through the Transport allocates %v times, the least adapter over the core %v", got, want)
	}
	t.Logf("Transport: %v allocations per call; the least adapter over the core: %v", got, want)
}

// TestHTTP1FirstAttemptAllocatesLittleMoreThanPlain: over an *http.Transport to a host known
// to speak HTTP/1, a call whose hedge is not due sends the caller's own request on the caller's
// own context and is cancelled, should it lose, through the Transport: beside what a plain
// round trip allocates (client and loopback server together), it costs the call, the hook
// that cancels it, and at most one more (the core's pooled state, remade after a GC). Sent on
// a context of its own, it would cost a copy of the request, a cancel chain and a channel.
func TestHTTP1FirstAttemptAllocatesLittleMoreThanPlain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	plain := &http.Transport{}
	defer plain.CloseIdleConnections()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := newTransport(t, Config{Policy: hedge.Config{Trigger: hedge.After(time.Hour)}, Next: base})
	call := roundTripOK(t, srv.URL)
	for range 3 { // connections, the host, its policy, its protocol
		call(plain)()
		call(tr)()
	}
	want := testing.AllocsPerRun(300, call(plain))
	got := testing.AllocsPerRun(300, call(tr))
	if got > want+3 {
		t.Errorf("a call through the Transport allocates %v times, a plain round trip %v: want at most 3 more", got, want)
	}
	t.Logf("Transport: %v allocations per call; plain: %v", got, want)
}

// roundTripOK returns, for a RoundTripper, one round trip of a new GET of url that must answer
// "ok". A new request each time, as a client sends, on both sides of a comparison: the
// Transport copies a request it has sent as it is before (Transport.sentBefore).
func roundTripOK(t *testing.T, url string) func(http.RoundTripper) func() {
	return func(rt http.RoundTripper) func() {
		return func() {
			req, err := http.NewRequest("GET", url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
				t.Fatalf("body = %q, %v; want \"ok\"", b, err)
			}
			resp.Body.Close()
		}
	}
}
