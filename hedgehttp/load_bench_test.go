package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge/workqueue"
)

// textPlain is the Content-Type of the typed handlers, shared so that setting it allocates nothing.
var textPlain = []string{"text/plain; charset=utf-8"}

// idleLoad is the report of a 64-worker queue whose one busy worker serves the request, as
// FormatLoad writes it: the value of the const handlers' fixed header.
var idleLoad = []string{FormatLoad(workqueue.Load{Busy: 1, Workers: 64})}

// BenchmarkLoadReport is what the Queue's load report costs a server: loopback HTTP/1.1
// requests to a handler behind a Queue, with the report (on) and without it (off), from a
// plain http.Transport. The handler of off and on sets no header, which lets net/http skip its
// header map altogether, so the report's is the response's first header; that of typed-off
// and typed-on sets its Content-Type first, as most handlers do. The target is on ≥ 98 % of
// off's throughput. Compare interleaved runs, each sub-benchmark in a process of its own (a
// sub-benchmark run after another in one process is slower for it). stream and typed-stream
// send no header but serve one load stream, read by a client at 10 ms, beside the requests:
// the out-of-band report's cost, to compare with off and typed-off. The h2- ones are the
// first four over HTTP/2 in clear text, whose header compression sends a repeated header
// name as an index. const and typed-const are off and typed-off with the handler setting a
// fixed header of the report's name and an idle queue's value: what net/http itself charges
// for one such header, the floor of any report sent on every response:
//
//	go test -c -o /tmp/hh.test ./hedgehttp
//	for i in $(seq 8); do for m in off on typed-off typed-on stream typed-stream const typed-const h2-off h2-on h2-typed-off h2-typed-on h2-const h2-typed-const; do
//	  /tmp/hh.test -test.run '^$' -test.bench "BenchmarkLoadReport/^$m\$" -test.benchtime 20000x | grep Benchmark
//	done; done > /tmp/lr.txt
func BenchmarkLoadReport(b *testing.B) {
	for _, mode := range []string{"off", "on", "typed-off", "typed-on", "stream", "typed-stream", "const", "typed-const", "h2-off", "h2-on", "h2-typed-off", "h2-typed-on", "h2-const", "h2-typed-const"} {
		b.Run(mode, func(b *testing.B) {
			h2 := strings.HasPrefix(mode, "h2-")
			mode := strings.TrimPrefix(mode, "h2-")
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			if strings.HasPrefix(mode, "typed-") {
				h = func(w http.ResponseWriter, r *http.Request) {
					w.Header()["Content-Type"] = textPlain
					io.WriteString(w, "ok")
				}
			}
			if strings.HasSuffix(mode, "const") {
				inner := h
				h = func(w http.ResponseWriter, r *http.Request) {
					w.Header()[LoadHeader] = idleLoad
					inner(w, r)
				}
			}
			stream := strings.HasSuffix(mode, "stream")
			q, err := NewQueue(h, QueueConfig{Workers: 64, NoLoadReport: !strings.HasSuffix(mode, "on")})
			if err != nil {
				b.Fatal(err)
			}
			ls, err := q.LoadStream(10 * time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			var handler http.Handler = q
			if stream {
				handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == LoadStreamPath {
						ls.ServeHTTP(w, r)
						return
					}
					q.ServeHTTP(w, r)
				})
			}
			srv := httptest.NewUnstartedServer(handler)
			base := &http.Transport{MaxIdleConnsPerHost: 256}
			if h2 {
				// HTTP/2 in clear text (h2c) on both sides: one connection, the requests
				// multiplexed on it.
				srv.Config.Protocols = new(http.Protocols)
				srv.Config.Protocols.SetUnencryptedHTTP2(true)
				base.Protocols = new(http.Protocols)
				base.Protocols.SetUnencryptedHTTP2(true)
			}
			srv.Start()
			if resp, err := base.RoundTrip(httptest.NewRequest("GET", srv.URL, nil)); err != nil {
				b.Fatal(err)
			} else if resp.Body.Close(); h2 != (resp.ProtoMajor == 2) {
				b.Fatalf("%s answered over %s", mode, resp.Proto)
			} else if want := strings.HasSuffix(mode, "on") || strings.HasSuffix(mode, "const"); want != (resp.Header.Get(LoadHeader) != "") {
				b.Fatalf("%s answered with %s %q", mode, LoadHeader, resp.Header.Get(LoadHeader))
			}
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
