package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStartSignal is the cost of the start signal on the path every call takes when no
// hedge fires: the hedging Transport (recommended policy, whose threshold never fires on
// loopback) calling a server behind a Queue, on loopback HTTP/1.1 with keep-alive.
//
//   - none: the Transport does not ask for the signal (what AtQuantile and After get);
//   - asked: it asks and listens, as for a trigger that reads signals, but the Queue is
//     configured not to send them (the client side's own cost);
//   - signalled: it asks, and the Queue writes a 102 Processing before every answer (one
//     more write and flush on the server, one more status line read on the client).
//
// Run them in one invocation, several times, and compare the medians:
//
//	go test -run '^$' -bench StartSignal -benchmem -benchtime 3000x -count 1 ./hedgehttp/
func BenchmarkStartSignal(b *testing.B) {
	for _, c := range []struct {
		name string
		ask  bool
		cfg  QueueConfig
	}{
		{"none", false, QueueConfig{}},
		{"asked", true, QueueConfig{NoStartSignal: true}},
		{"signalled", true, QueueConfig{}},
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
			rt := hedgedRT(b, base)
			rt.(*Transport).signals = c.ask
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
