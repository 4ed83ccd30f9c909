package hedgehttp

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// BenchmarkHedgeOwnConnection is the cost of sending an HTTP/2 hedge to its primary's host
// over a connection of its own (the default) rather than the primary's (ShareConnections):
// every call hedges at once, the hedge answers at once and the primary only when cancelled.
// It reports the server connections opened over the run.
//
//	go test -run '^$' -bench HedgeOwnConnection -benchmem -count 6 ./hedgehttp/
func BenchmarkHedgeOwnConnection(b *testing.B) {
	for _, share := range []bool{true, false} {
		name := "own"
		if share {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(AttemptHeader) == "" {
					select {
					case <-r.Context().Done():
						return
					case <-time.After(time.Second):
					}
				}
				io.WriteString(w, "ok")
			}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.EnableHTTP2 = true
			srv.StartTLS()
			base := &http.Transport{
				TLSClientConfig:   srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone(),
				ForceAttemptHTTP2: true,
			}
			tr, err := NewTransport(Config{
				Policy:           hedge.Config{Trigger: hedge.After(0), Budget: budget.Config{Off: true}},
				Next:             base,
				ShareConnections: share,
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				tr.CloseIdleConnections()
				srv.Close()
			})
			req, _ := http.NewRequest("GET", srv.URL, nil)
			buf := make([]byte, 64)
			get(b, tr, req, buf) // connect outside the timing
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				get(b, tr, req, buf)
			}
			b.StopTimer()
			b.ReportMetric(float64(conns.Load()), "conns")
		})
	}
}
