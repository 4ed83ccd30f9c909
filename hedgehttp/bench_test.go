package hedgehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// The benchmarks compare a plain http.Transport with the hedging Transport wrapped around
// it, on loopback HTTP/1.1 with keep-alive, with a recommended policy that never fires a
// hedge (the threshold stays at its 10ms floor, far above loopback latency): the cost of
// leaving hedging on. Each reports the median request latency as p50-ns.
//
//	go test -run '^$' -bench 'Plain|Hedged' -benchmem -count 6 ./hedgehttp/ > bench.txt

func benchServer(b *testing.B) (*httptest.Server, *http.Transport) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	base := &http.Transport{MaxIdleConnsPerHost: 256}
	b.Cleanup(func() {
		base.CloseIdleConnections()
		srv.Close()
	})
	return srv, base
}

func hedgedRT(b *testing.B, base http.RoundTripper) http.RoundTripper {
	tr, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: base})
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// get makes one request and reads its body to the end, as a client would.
func get(b *testing.B, rt http.RoundTripper, req *http.Request, buf []byte) {
	if err := roundTrip(rt, req, buf); err != nil {
		b.Fatal(err)
	}
}

// roundTrip sends req through rt and reads its response's body to the end, with buf.
func roundTrip(rt http.RoundTripper, req *http.Request, buf []byte) error {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	for {
		_, err := resp.Body.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func benchSerial(b *testing.B, hedged bool) {
	benchSerialRT(b, func(b *testing.B, base http.RoundTripper) http.RoundTripper {
		if hedged {
			return hedgedRT(b, base)
		}
		return base
	})
}

func benchParallel(b *testing.B, hedged bool) {
	benchParallelRT(b, func(b *testing.B, base http.RoundTripper) http.RoundTripper {
		if hedged {
			return hedgedRT(b, base)
		}
		return base
	})
}

func benchSerialRT(b *testing.B, wrap func(*testing.B, http.RoundTripper) http.RoundTripper) {
	srv, base := benchServer(b)
	rt := wrap(b, base)
	req, _ := http.NewRequest("GET", srv.URL, nil)
	buf := make([]byte, 512)
	for range 100 { // warm the connection pool and, hedged, the estimator
		get(b, rt, req, buf)
	}
	lat := make([]time.Duration, 0, b.N)
	g0, cpu0 := goroutinesCreated(), cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		get(b, rt, req, buf)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportP50(b, lat)
	b.ReportMetric(float64(goroutinesCreated()-g0)/float64(b.N), "goroutines/op")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	reportHedges(b, rt)
}

// reportHedges reports the hedges that fired: on a loaded machine a stall of more than the
// 10ms floor can fire one, and a run where many fire measures something else.
func reportHedges(b *testing.B, rt http.RoundTripper) {
	tr, ok := rt.(*Transport)
	if !ok {
		return
	}
	var n int64
	for _, v := range tr.Measured() {
		n += v.HedgesStarted
	}
	b.ReportMetric(float64(n), "hedges")
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func benchParallelRT(b *testing.B, wrap func(*testing.B, http.RoundTripper) http.RoundTripper) {
	srv, base := benchServer(b)
	rt := wrap(b, base)
	warm, _ := http.NewRequest("GET", srv.URL, nil)
	for range 100 {
		get(b, rt, warm, make([]byte, 512))
	}
	var mu sync.Mutex
	var all []time.Duration
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		buf := make([]byte, 512)
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			start := time.Now()
			get(b, rt, req, buf)
			lat = append(lat, time.Since(start))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	b.StopTimer()
	reportP50(b, all)
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	reportHedges(b, rt)
}

func reportP50(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkPlain is a plain http.Transport; BenchmarkHedged the same wrapped in a hedging
// Transport. Compare them with
//
//	benchstat -col .name bench.txt
func BenchmarkPlain(b *testing.B) {
	b.Run("serial", func(b *testing.B) { benchSerial(b, false) })
	b.Run("parallel", func(b *testing.B) { benchParallel(b, false) })
}

func BenchmarkHedged(b *testing.B) {
	b.Run("serial", func(b *testing.B) { benchSerial(b, true) })
	b.Run("parallel", func(b *testing.B) { benchParallel(b, true) })
}

// BenchmarkQueue measures the server middleware's own cost on its fast path (a free
// worker), without a network.
func BenchmarkQueue(b *testing.B) {
	q, err := NewQueue(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), QueueConfig{Workers: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var w discardWriter
		for pb.Next() {
			q.ServeHTTP(&w, req)
		}
	})
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header {
	if w.h == nil {
		w.h = make(http.Header)
	}
	return w.h
}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// cannedNext answers every request at once, without I/O: under it, a benchmark measures the
// Transport's own cost per call.
type cannedNext struct{}

func (cannedNext) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

// BenchmarkOverhead is the hedging Transport's own cost per call (no network, no hedge
// fires): policy lookup, the gate, the clone, Do's attempt goroutine and timer (serial-inline:
// DoInline's timer, without the goroutine).
func BenchmarkOverhead(b *testing.B) {
	rt := hedgedRT(b, cannedNext{})
	req, _ := http.NewRequest("GET", "http://svc.test/", nil)
	buf := make([]byte, 8)
	b.ReportAllocs()
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			get(b, rt, req, buf)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				get(b, rt, req, buf)
			}
		})
	})
	// The same with the first attempt on the caller's goroutine (a Next that honours its
	// context): the transport's own work without the attempt goroutine's hand-off.
	inline, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: cannedNext{}, NextHonoursContext: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial-inline", func(b *testing.B) {
		for range b.N {
			get(b, inline, req, buf)
		}
	})
	// With a body to read and close, beside its floors: the same Next called directly, and
	// the least an adapter over hedge.DoInlineDetached does (the attempt on its own context,
	// the winner's context released when its body is closed). The Transport's own work is
	// what serial-inline-body costs over floor-core-inline.
	p, err := hedge.New(hedge.Config{Trigger: hedge.After(50 * time.Millisecond)})
	if err != nil {
		b.Fatal(err)
	}
	withBody, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.After(50 * time.Millisecond)}, Next: bodyNext{}, NextHonoursContext: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"floor-next-body", bodyNext{}},
		{"floor-core-inline-body", coreInline{p: p, next: bodyNext{}}},
		{"serial-inline-body", withBody},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				get(b, c.rt, req, buf)
			}
		})
	}
}

// bodyNext answers every request at once with a two-byte body, without I/O.
type bodyNext struct{}

func (bodyNext) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, ProtoMajor: 1, Body: &okBody{}, Request: r}, nil
}

type okBody struct{ read bool }

func (b *okBody) Read(p []byte) (int, error) {
	if b.read {
		return 0, io.EOF
	}
	b.read = true
	return copy(p, "ok"), nil
}

func (b *okBody) Close() error { return nil }

// coreInline is the least a hedging RoundTripper over hedge.DoInlineDetached does: each
// attempt is the request on the attempt's context, and the winner's context is released when
// its body is closed. It is a floor for the Transport, not a substitute: it has no
// per-host policy, no classification, no body replay.
type coreInline struct {
	p    *hedge.Policy
	next http.RoundTripper
}

func (t coreInline) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, hold, err := hedge.DoInlineDetached(req.Context(), t.p, func(ctx context.Context) (*http.Response, error) {
		return t.next.RoundTrip(req.WithContext(ctx))
	}, func(r *http.Response, _ error) {
		if r != nil {
			r.Body.Close()
		}
	})
	if err != nil {
		hold.Release()
		return nil, err
	}
	resp.Body = &body{rc: resp.Body, hold: hold}
	return resp, nil
}

// BenchmarkNoTrigger is a control: the Transport with a policy that never hedges (no timer is
// armed), so that beside BenchmarkPlain and BenchmarkHedged it separates the cost of the
// attempt goroutine and the transport's own work from the cost of hedging.
func BenchmarkNoTrigger(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		benchSerialRT(b, func(b *testing.B, base http.RoundTripper) http.RoundTripper {
			tr, err := NewTransport(Config{Policy: hedge.Config{}, Next: base})
			if err != nil {
				b.Fatal(err)
			}
			return tr
		})
	})
}

// BenchmarkOverheadReplicas is BenchmarkOverhead with Config.Replicas: the per-call cost of
// picking a healthy replica (power of two choices) and reporting each attempt's result to
// outlier detection, beside BenchmarkOverhead without replicas.
func BenchmarkOverheadReplicas(b *testing.B) {
	for _, n := range []int{2, 8} {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = "10.0.0." + strconv.Itoa(i+1) + ":80"
		}
		tr, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: cannedNext{},
			Replicas: func(string) []string { return addrs }})
		if err != nil {
			b.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://svc.test/", nil)
		buf := make([]byte, 8)
		b.Run(strconv.Itoa(n)+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				get(b, tr, req, buf)
			}
		})
	}
}
