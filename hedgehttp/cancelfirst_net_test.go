package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestLateCancelOfAFirstAttemptSparesTheNextRoundTrip: the hook that cancels an HTTP/1 first
// attempt sent on the caller's own request (call.cancelFirst) may run late, after the attempt
// has answered and the call is over; the caller may by then be sending the same request
// again, and the Transport's cancel is keyed by the request. Once the attempt has answered
// (firstDone), the hook cancels nothing; before, it cancels the request in flight.
func TestLateCancelOfAFirstAttemptSparesTheNextRoundTrip(t *testing.T) {
	checkGoroutines(t)
	arrived := make(chan struct{}, 1)
	release := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := newTransport(t, Config{Next: base})
	for _, answered := range []bool{true, false} {
		// A request of its own each time: net/http's round trip of a request, once its body
		// is read, removes the request's cancel function on its own goroutine, maybe after
		// the next round trip of the same request set it (see Transport.sentBefore).
		req := mustRequest(t, "GET", srv.URL, nil)
		errc := make(chan error, 1)
		go func() { // the caller's next round trip of the same request
			resp, err := base.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		<-arrived
		c := &call{t: tr, req: req, first: req, firstDone: answered}
		c.cancelFirst()
		if answered {
			// Only now may the handler answer. A cancelled round trip is left to end by
			// itself: its response, were it already on its way, could beat the cancel.
			release <- struct{}{}
		}
		select {
		case err := <-errc:
			if answered && err != nil {
				t.Errorf("after the first attempt answered, the hook cancelled the request's next round trip: %v", err)
			}
			if !answered && err == nil {
				t.Error("the hook did not cancel the first attempt in flight")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the round trip did not end")
		}
		select {
		case <-release: // not taken by a cancelled handler
		default:
		}
	}
}

// TestHTTP1FirstAttemptBodyIsTheTransports: a winning first attempt that went out on the
// caller's own request and context over HTTP/1 needs nothing of its attempt's context while
// its body is read, so RoundTrip releases the winner at once and hands back the Transport's
// own body, unwrapped, as a plain round trip would; the body still reads to its end.
func TestHTTP1FirstAttemptBodyIsTheTransports(t *testing.T) {
	checkGoroutines(t)
	payload := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB: many reads
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, payload)
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := newTransport(t, Config{Next: base})
	for i := range 3 { // the first call learns that the host speaks HTTP/1
		resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, wrapped := resp.Body.(*body)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != payload {
			t.Fatalf("call %d: read %d bytes, %v; want all %d", i, len(got), err, len(payload))
		}
		if i > 0 && wrapped {
			t.Errorf("call %d: the body is wrapped to hold the winner's context, which its request never used", i)
		}
	}
}

// TestTransportRemembersRequestsSentAsTheyAre: a first attempt that would go out on the
// caller's own request goes out as a copy when that request went out so before, since
// net/http's previous round trip of it may remove the cancel function the new one set
// (Transport.sentBefore): the Transport remembers each request it sent as it is, apart from
// another in a slot of its own.
func TestTransportRemembersRequestsSentAsTheyAre(t *testing.T) {
	tr := newTransport(t, Config{})
	slot := func(r *http.Request) uintptr { return (uintptr(unsafe.Pointer(r)) >> 4) % sentOwnSlots }
	a := mustRequest(t, "GET", "http://127.0.0.1:1/", nil)
	b := mustRequest(t, "GET", "http://127.0.0.1:1/", nil)
	for slot(b) == slot(a) { // two requests in one slot push each other out, by design
		b = mustRequest(t, "GET", "http://127.0.0.1:1/", nil)
	}
	if tr.sentBefore(a) || tr.sentBefore(b) {
		t.Fatal("a request never sent counts as sent before")
	}
	if !tr.sentBefore(a) || !tr.sentBefore(b) {
		t.Fatal("a request sent again does not count as sent before")
	}
	if !tr.sentBefore(a) {
		t.Fatal("a request sent a third time does not count as sent before")
	}
}
