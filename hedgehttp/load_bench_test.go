package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkLoadReport is what the Queue's load report costs a server: loopback HTTP/1.1
// requests to a plain handler behind a Queue, with the report (on) and without it (off),
// from a plain http.Transport. The target is on ≥ 98 % of off's throughput. Compare
// interleaved runs:
//
//	for i in $(seq 8); do go test -run '^$' -bench 'LoadReport' -benchtime 20000x -count 1 ./hedgehttp/ | grep Benchmark; done > /tmp/lr.txt
func BenchmarkLoadReport(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			q, err := NewQueue(h, QueueConfig{Workers: 64, NoLoadReport: mode == "off"})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(q)
			base := &http.Transport{MaxIdleConnsPerHost: 256}
			b.Cleanup(func() {
				base.CloseIdleConnections()
				srv.Close()
			})
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", srv.URL, nil)
				buf := make([]byte, 512)
				for pb.Next() {
					get(b, base, req, buf)
				}
			})
		})
	}
}

// BenchmarkQueueLoadReport is the report's own cost on the server, without a network: a Queue
// with a free worker in front of a handler that writes a short body, with the report (on) and
// without (off). The difference is what the report adds to every response.
func BenchmarkQueueLoadReport(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			q, err := NewQueue(h, QueueConfig{Workers: 1 << 20, NoLoadReport: mode == "off"})
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest("GET", "/", nil)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var w discardWriter
				for pb.Next() {
					clear(w.h)
					q.ServeHTTP(&w, req)
				}
			})
		})
	}
}

// BenchmarkParseLoad is the report's cost on the client: reading the header's value.
func BenchmarkParseLoad(b *testing.B) {
	v := "queued=3, busy=16, workers=16, wait=12.5"
	b.ReportAllocs()
	for range b.N {
		if _, ok := ParseLoad(v); !ok {
			b.Fatal("no report")
		}
	}
}
