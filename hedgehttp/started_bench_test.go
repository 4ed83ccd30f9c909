package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// BenchmarkStartSignal is the cost of the start signal on the path every call takes when no
// hedge fires: the hedging Transport calling a server behind a Queue, on loopback HTTP/1.1
// with keep-alive, with a threshold (10ms at least) that loopback answers never reach.
//
//   - none: AtQuantile(0.95), which does not ask for the signal (nor does After);
//   - asked: StartAware(0.95), which asks and listens, from a Queue configured not to send
//     the signal (the client side's own cost);
//   - signalled: StartAware(0.95), and the Queue writes a 102 Processing before every answer
//     (one more write and flush on the server, one more status line read on the client, and
//     the call's reaction to it).
//
// Run them in one invocation, several times, and compare the medians:
//
//	go test -run '^$' -bench StartSignal -benchmem -benchtime 3000x -count 1 ./hedgehttp/
func BenchmarkStartSignal(b *testing.B) {
	for _, c := range []struct {
		name    string
		trigger hedge.Trigger
		cfg     QueueConfig
	}{
		{"none", hedge.AtQuantile(0.95), QueueConfig{}},
		{"asked", hedge.StartAware(0.95), QueueConfig{NoStartSignal: true}},
		{"signalled", hedge.StartAware(0.95), QueueConfig{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q, err := NewQueue(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok")
			}), c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(q)
			base := &http.Transport{MaxIdleConnsPerHost: 256}
			b.Cleanup(func() {
				base.CloseIdleConnections()
				srv.Close()
			})
			rt, err := NewTransport(Config{Policy: hedge.Config{Trigger: c.trigger}, Next: base})
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest("GET", srv.URL, nil)
			buf := make([]byte, 512)
			for range 100 { // warm the connection pool and the estimator
				get(b, rt, req, buf)
			}
			lat := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				get(b, rt, req, buf)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportP50(b, lat)
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			reportHedges(b, rt)
		})
	}
}
