package hedgehttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
)

// TestStartSignalResetStreamDoesNotRaceTheHandlersHeaders: over HTTP/2, Go's server writes
// a 1xx from the response's own header map on a goroutine of its own, and when the stream is
// reset while that write is under way, WriteHeader returns before the map has been read
// (golang/go#67940). A handler that then sets a header writes the map while the server still
// reads it: a data race, and a concurrent map write that can crash the process. Tied requests
// make such resets routine (the copy that starts second is cancelled as its 102 goes out), so
// the Queue must not run a handler whose client has gone by the time its start signal is out.
// The race detector sees the race within a few hundred requests; the test needs -race.
func TestStartSignalResetStreamDoesNotRaceTheHandlersHeaders(t *testing.T) {
	if !raceEnabled {
		t.Skip("the race it checks for is seen by the race detector only")
	}
	checkGoroutines(t)
	q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "1")
		io.WriteString(w, "ok")
	}), QueueConfig{Workers: 4})
	entered := make(chan struct{}, 1)
	srv, tr := startServer(t, "HTTP/2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Headers set outside the queue (a middleware's) make the 102 longer to encode, so
		// that the reset lands while the server writes it more often.
		for i := range 40 {
			w.Header().Set(fmt.Sprintf("X-Outer-%d", i), "a value the server has to encode")
		}
		entered <- struct{}{}
		q.ServeHTTP(w, r)
	}))
	for i := range 3000 {
		ctx, cancel := context.WithCancel(context.Background())
		req := mustRequest(t, "GET", srv.URL, nil).WithContext(ctx)
		req.Header.Set(StartSignalHeader, "1")
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-entered
		// Cancel at a point that moves a little every request, to sweep the reset across
		// the writing of the 102.
		for range i % 200 {
			runtime.Gosched()
		}
		cancel()
		<-done
		if t.Failed() {
			break
		}
	}
}
