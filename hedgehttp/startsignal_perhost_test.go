package hedgehttp

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hedgekit/hedge"
)

// Each host asks for start signals by its own trigger: PolicyFor may give one operation Tied
// and another a quantile trigger, whatever Config.Policy says. The tied one's attempts must
// ask a Queue for its start signal (without it, Tied would only ever hedge on latency); the
// other's must not, and pay nothing for it.
func TestStartSignalsAskedPerHost(t *testing.T) {
	checkGoroutines(t)
	var mu sync.Mutex
	asked := map[string][]bool{}
	q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := r.Header[StartSignalHeader]
		mu.Lock()
		asked[r.URL.Path] = append(asked[r.URL.Path], ok)
		mu.Unlock()
	}), QueueConfig{Workers: 2})
	srv, base := startServer(t, "HTTP/1.1", q)
	for name, policy := range map[string]hedge.Config{"the default": {}, "Tied": {Trigger: hedge.Tied()}} {
		tr := newTransport(t, Config{
			Next:   base,
			Policy: policy,
			Key:    func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") },
			PolicyFor: func(key string) (hedge.Config, hedge.Repeatability) {
				if key == "tied" {
					return hedge.Config{Trigger: hedge.Tied()}, hedge.RepeatableDefault
				}
				return hedge.Config{Trigger: hedge.AtQuantile(0.95)}, hedge.RepeatableDefault
			},
		})
		mu.Lock()
		clear(asked)
		mu.Unlock()
		for _, path := range []string{"/tied", "/plain", "/tied", "/plain"} {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		mu.Lock()
		for path, want := range map[string]bool{"/tied": true, "/plain": false} {
			if len(asked[path]) == 0 {
				t.Errorf("Config.Policy %s: no request reached %s", name, path)
			}
			for i, got := range asked[path] {
				if got != want {
					t.Errorf("Config.Policy %s: request %d to %s asked for a start signal: %v, want %v", name, i, path, got, want)
				}
			}
		}
		mu.Unlock()
	}
}
