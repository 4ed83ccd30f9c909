package hedgehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
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
				useH2C(srv, base)
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

// BenchmarkLoadReportPaired measures what BenchmarkLoadReport measures with the two servers
// taking turns, call by call, from one goroutine (its name keeps it out of -bench
// BenchmarkLoadReport): off is a Queue without the report, on one with it, each in front of
// the same handler, which sets its Content-Type as most handlers do, each on a loopback
// server of its own, so that both see the same machine at the same moments. In report, on
// is the Queue's report; in fixed-header, a Queue without it whose handler sets a fixed
// header of the report's name and an idle queue's value: what net/http charges for one such
// header, the floor under any report sent on every response. The h2- ones are the same over
// HTTP/2 in clear text. The calls come from one goroutine, or (parallel-) from GOMAXPROCS
// goroutines at once, which keep the machine's CPUs busy: there the wall time of a block is
// the inverse of the server's throughput. Each iteration is a block of 25 calls from each
// goroutine to each server. It reports the median time of a call to each (p50-off-ns,
// p50-ns), the overhead of the median (overhead-%), of the blocks' wall time
// (wall-overhead-%: what the report costs the throughput) and of the process's CPU time,
// client and server together (cpu-overhead-%, where getrusage is available).
//
//	go test -c -o /tmp/hh.test ./hedgehttp
//	for i in $(seq 8); do /tmp/hh.test -test.run '^$' -test.bench 'BenchmarkLoadReportPaired' -test.benchtime 800x | grep Benchmark; done
func BenchmarkLoadReportPaired(b *testing.B) {
	typed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = textPlain
		io.WriteString(w, "ok")
	})
	fixed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()[LoadHeader] = idleLoad
		typed(w, r)
	})
	for _, tc := range []struct {
		name   string
		h2     bool
		report bool         // on is a Queue with the report
		on     http.Handler // the handler behind on's Queue
	}{
		{"report", false, true, typed},
		{"fixed-header", false, false, fixed},
		{"h2-report", true, true, typed},
		{"h2-fixed-header", true, false, fixed},
	} {
		for _, par := range []int{1, runtime.GOMAXPROCS(0)} {
			name := tc.name
			if par > 1 {
				name = "parallel-" + name
			}
			b.Run(name, func(b *testing.B) {
				off := pairedServer(b, typed, false, tc.h2)
				on := pairedServer(b, tc.on, tc.report, tc.h2)
				benchPairedGets(b, off, on, par)
			})
		}
	}
}

// useH2C has an unstarted server and a client speak HTTP/2 in clear text (h2c) to each other:
// one connection, the requests multiplexed on it.
func useH2C(srv *httptest.Server, rt *http.Transport) {
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	rt.Protocols = new(http.Protocols)
	rt.Protocols.SetUnencryptedHTTP2(true)
}

// pairedSide is one server of BenchmarkLoadReportPaired and the client that calls it.
type pairedSide struct {
	rt  *http.Transport
	req *http.Request
	buf []byte
}

// pairedServer serves h behind a Queue of 64 workers, with the load report or without it, over
// HTTP/1.1 or HTTP/2 in clear text, and returns a client of its own for it.
func pairedServer(b *testing.B, h http.Handler, report, h2 bool) *pairedSide {
	q, err := NewQueue(h, QueueConfig{Workers: 64, NoLoadReport: !report})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(q)
	rt := &http.Transport{MaxIdleConnsPerHost: 4}
	if h2 {
		useH2C(srv, rt)
	}
	srv.Start()
	b.Cleanup(func() {
		rt.CloseIdleConnections()
		srv.Close()
	})
	req, err := http.NewRequest("GET", srv.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	return &pairedSide{rt: rt, req: req, buf: make([]byte, 512)}
}

// benchPairedGets alternates blocks of calls to off and on (see BenchmarkLoadReportPaired),
// from par goroutines at once, after checking that on's responses carry the header and off's
// do not.
func benchPairedGets(b *testing.B, off, on *pairedSide, par int) {
	for _, s := range []struct {
		side *pairedSide
		want bool
	}{{off, false}, {on, true}} {
		resp, err := s.side.rt.RoundTrip(s.side.req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if has := resp.Header.Get(LoadHeader) != ""; has != s.want {
			b.Fatalf("a response with %s %q, want one: %v", LoadHeader, resp.Header.Get(LoadHeader), s.want)
		}
	}
	// A block is 25 calls from each of par goroutines, each call timed, and the block's wall
	// and CPU time: the process's CPU time per call is too fine for the clock getrusage reads.
	const block = 25
	lat := [2][][]time.Duration{make([][]time.Duration, par), make([][]time.Duration, par)}
	var wall, cpu [2]time.Duration
	bufs := make([][]byte, par)
	for g := range bufs {
		bufs[g] = make([]byte, 512)
	}
	run := func(i int, s *pairedSide, timed bool) {
		c0, t0 := cpuTime(), time.Now()
		var wg sync.WaitGroup
		for g := range par {
			wg.Go(func() {
				for range block {
					start := time.Now()
					if err := roundTrip(s.rt, s.req, bufs[g]); err != nil {
						b.Error(err) // not Fatal: this is not the benchmark's goroutine
						return
					}
					if timed {
						lat[i][g] = append(lat[i][g], time.Since(start))
					}
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		if timed {
			wall[i] += time.Since(t0)
			cpu[i] += cpuTime() - c0
		}
	}
	b.ReportAllocs()
	alternateBlocks(b, func(timed bool) { run(0, off, timed) }, func(timed bool) { run(1, on, timed) })
	median := func(ls [][]time.Duration) time.Duration {
		all := slices.Concat(ls...)
		slices.Sort(all)
		return all[len(all)/2]
	}
	moff, mon := median(lat[0]), median(lat[1])
	b.ReportMetric(float64(moff), "p50-off-ns")
	b.ReportMetric(float64(mon), "p50-ns")
	b.ReportMetric(100*(float64(mon)/float64(moff)-1), "overhead-%")
	b.ReportMetric(100*(float64(wall[1])/float64(wall[0])-1), "wall-overhead-%")
	if cpu[0] > 0 {
		b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "cpu-overhead-%")
	}
}

// alternateBlocks runs 40 untimed blocks of off and on (connections open, pools warm), then a
// timed block of each per iteration, the order alternating, and stops the timer.
func alternateBlocks(b *testing.B, off, on func(timed bool)) {
	for range 40 {
		off(false)
		on(false)
	}
	n := 0
	for b.Loop() {
		if n%2 == 0 {
			off(true)
			on(true)
		} else {
			on(true)
			off(true)
		}
		n++
	}
	b.StopTimer()
}
