package hedgehttp

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestDeadlineAwareOverHTTP: the Transport hedges by a request's context deadline with no
// code of its own, since the state machine reads it through hedge.Do. The host's policy has
// learnt that attempts take 300ms (its p95, and so its threshold); a request with 350ms to go
// is hedged at its last moment, 350ms less the p95, long before its threshold, when a copy
// can still answer in time, and the copy's answer is the response.
func TestDeadlineAwareOverHTTP(t *testing.T) {
	checkGoroutines(t)
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			var hedges atomic.Int32
			srv, next := startServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Header.Get(AttemptHeader) != "":
					hedges.Add(1)
					io.WriteString(w, "hedge")
				case r.URL.Query().Get("warm") != "":
					io.WriteString(w, "warm")
				default:
					<-r.Context().Done() // the first attempt is a straggler until it loses
				}
			}))
			var mu sync.Mutex
			var started []hedge.Event
			tr := newTransport(t, Config{Next: next, Policy: hedge.Config{
				Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{UseDeadline: true, MinimumInService: hedge.Off, BacklogRatio: hedge.Off}),
				Observer: func(e hedge.Event) {
					if e.Kind == hedge.HedgeStarted {
						mu.Lock()
						started = append(started, e)
						mu.Unlock()
					}
				},
			}})
			client := &http.Client{Transport: tr}
			get := func(ctx context.Context, url string) string {
				t.Helper()
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				checkProto(t, proto, resp)
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			get(t.Context(), srv.URL+"/?warm=1") // the host's policy now exists
			if proto == "HTTP/2" {
				// Over HTTP/2 the hedge is kept off its primary's connection (Config.
				// ShareConnections) and goes on one of its own. Open it now: the hedge below
				// has the 300ms the deadline leaves it for a round trip, and a TLS handshake
				// under -race on a busy machine can take much of that.
				req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/?warm=1", nil)
				resp, err := tr.apart.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			var p *hedge.Policy
			for key := range tr.Measured() {
				p = tr.Policy(key)
			}
			// What the policy would have learnt from 20 answers of 300ms, fed on the state
			// machine's explicit clock rather than waited for.
			now := time.Now()
			for range 20 {
				c := p.NewCall(hedge.CallOptions{})
				c.Start(now.Add(-300 * time.Millisecond))
				c.AttemptDone(now, 0, hedge.Outcome{})
			}
			s := p.Measured().Threshold
			if s < 250*time.Millisecond {
				t.Fatalf("threshold %v after the warm-up, want about 300ms", s)
			}

			ctx, cancel := context.WithTimeout(t.Context(), 350*time.Millisecond)
			defer cancel()
			if body := get(ctx, srv.URL+"/"); body != "hedge" || hedges.Load() != 1 {
				t.Fatalf("response %q after %d hedges, want the one hedge's", body, hedges.Load())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(started) != 1 || started[0].Delay <= 0 || started[0].Delay > 350*time.Millisecond-s {
				t.Errorf("hedges started %+v; want one at most 350ms less the p95 (%v) after the request", started, s)
			}
		})
	}
}
