package hedgehttp

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStalledGetBodyDoesNotHoldTheWinner: a hedge copies its body through the request's
// GetBody, the caller's own code, which may take its time (a file reopened on a slow disk, a
// body rebuilt from a source that stalls). A primary that answers meanwhile has won: its
// answer must reach the caller at once, not when the losing hedge's GetBody returns.
func TestStalledGetBodyDoesNotHoldTheWinner(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			entered := make(chan struct{}) // the hedge is inside GetBody
			release := make(chan struct{}) // lets GetBody return
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.Header.Get(AttemptHeader) != "" {
					io.WriteString(w, "hedge")
					return
				}
				select { // the primary answers once the hedge is stuck in GetBody
				case <-entered:
				case <-time.After(10 * time.Second):
				}
				io.WriteString(w, "primary")
			})
			srv, base := startServer(t, proto, h)
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
			req := mustRequest(t, "PUT", srv.URL, strings.NewReader("payload"))
			getBody := req.GetBody
			var once sync.Once
			req.GetBody = func() (io.ReadCloser, error) {
				once.Do(func() { close(entered) })
				<-release
				return getBody()
			}
			defer func() {
				select {
				case <-release:
				default:
					close(release)
				}
			}()

			type result struct {
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- result{string(b), err}
			}()
			select {
			case r := <-done:
				if r.err != nil || r.body != "primary" {
					t.Errorf("RoundTrip answered %q, %v; want the primary's %q", r.body, r.err, "primary")
				}
			case <-time.After(5 * time.Second):
				t.Error("RoundTrip did not return the primary's answer while the losing hedge's GetBody was stalled")
				close(release)
				<-done
			}
		})
	}
}
