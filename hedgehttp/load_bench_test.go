package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// textPlain is the Content-Type of the typed handlers, shared so that setting it allocates nothing.
var textPlain = []string{"text/plain; charset=utf-8"}

// BenchmarkLoadReport is what the Queue's load report costs a server: loopback HTTP/1.1
// requests to a handler behind a Queue, with the report (on) and without it (off), from a
// plain http.Transport. The handler of off and on sets no header, which lets net/http skip its
// header map altogether, so the report's is the response's first header; that of typed-off
// and typed-on sets its Content-Type first, as most handlers do. The target is on ≥ 98 % of
// off's throughput. Compare interleaved runs, each sub-benchmark in a process of its own (a
// sub-benchmark run after another in one process is slower for it). stream and typed-stream
// send no header but serve one load stream, read by a client at 10 ms, beside the requests:
// the out-of-band report's cost, to compare with off and typed-off:
//
//	go test -c -o /tmp/hh.test ./hedgehttp
//	for i in $(seq 8); do for m in off on typed-off typed-on stream typed-stream; do
//	  /tmp/hh.test -test.run '^$' -test.bench "BenchmarkLoadReport/^$m\$" -test.benchtime 20000x | grep Benchmark
//	done; done > /tmp/lr.txt
func BenchmarkLoadReport(b *testing.B) {
	for _, mode := range []string{"off", "on", "typed-off", "typed-on", "stream", "typed-stream"} {
		b.Run(mode, func(b *testing.B) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			if strings.HasPrefix(mode, "typed-") {
				h = func(w http.ResponseWriter, r *http.Request) {
					w.Header()["Content-Type"] = textPlain
					io.WriteString(w, "ok")
				}
			}
			stream := strings.HasSuffix(mode, "stream")
			q, err := NewQueue(h, QueueConfig{Workers: 64, NoLoadReport: strings.HasSuffix(mode, "off") || stream})
			if err != nil {
				b.Fatal(err)
			}
			var srv *httptest.Server
			ls, err := q.LoadStream(10 * time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			if stream {
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == LoadStreamPath {
						ls.ServeHTTP(w, r)
						return
					}
					q.ServeHTTP(w, r)
				}))
			} else {
				srv = httptest.NewServer(q)
			}
			base := &http.Transport{MaxIdleConnsPerHost: 256}
			b.Cleanup(func() {
				ls.Close()
				base.CloseIdleConnections()
				srv.Close()
			})
			if stream {
				// One client's stream, a report every 10 ms, read while the requests run.
				resp, err := base.RoundTrip(httptest.NewRequest("GET", srv.URL+LoadStreamPath+"?interval=10ms", nil).WithContext(b.Context()))
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					defer resp.Body.Close()
					io.Copy(io.Discard, resp.Body)
				}()
			}
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
