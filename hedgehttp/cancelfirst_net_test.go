package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
	req := mustRequest(t, "GET", srv.URL, nil)

	for _, answered := range []bool{true, false} {
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
		release <- struct{}{}
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
