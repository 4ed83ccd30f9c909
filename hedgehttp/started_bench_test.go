package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStartSignal is the cost of the start signal on the path every call takes when no
// hedge fires: the hedging Transport (recommended policy) calling a server behind a Queue,
// which writes a 102 Processing before each answer ("on") or not ("off"), on loopback
// HTTP/1.1 with keep-alive. The client side is the same in both (it asks for the signal
// and listens for it), so on/off is the price of the 1xx on the wire: one more write, and
// a flush, per request on the server; one more status line parsed on the client. Run both
// in one invocation and compare the p50-ns of the pair:
//
//	go test -run '^$' -bench StartSignal -benchmem -count 6 ./hedgehttp/ > start.txt
func BenchmarkStartSignal(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  QueueConfig
	}{{"on", QueueConfig{}}, {"off", QueueConfig{NoStartSignal: true}}} {
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
