package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cristalhq/hedgedhttp"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// BenchmarkPairedHTTP measures what BenchmarkHTTP measures, with the transports taking turns
// (its name keeps it out of -bench BenchmarkHTTP): each iteration sends a block of calls
// through each of them (in an order that rotates), to one loopback server, and adds up each
// one's wall and CPU time. On a shared machine whose load drifts, every transport then sees
// the same machine, where BenchmarkHTTP's sub-benchmarks run seconds apart. It reports each
// transport's wall and CPU time per call (<name>-ns/call, <name>-cpu-ns/call: the CPU time of
// the process, client and server, while that transport's blocks ran), and hedgehttp's
// throughput against plain's and hedgedhttp's, as ratios of wall time (hedgehttp-%-of-plain,
// hedgehttp-x-hedgedhttp) and of CPU time (the -cpu ones).
func BenchmarkPairedHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	type side struct {
		name     string
		client   *http.Client
		wall     time.Duration
		cpu      time.Duration
		calls    int
		closeIdl func()
	}
	add := func(name string, rt func(*http.Transport) http.RoundTripper) *side {
		tr := newTransport()
		return &side{name: name, client: &http.Client{Transport: rt(tr)}, closeIdl: tr.CloseIdleConnections}
	}
	newPolicy := func() *hedge.Policy { return mustPolicy(b, hedge.Config{Trigger: hedge.After(noFireDelay)}) }
	sides := []*side{
		add("plain", func(tr *http.Transport) http.RoundTripper { return tr }),
		add("plain-cancel", func(tr *http.Transport) http.RoundTripper { return cancelTransport{tr} }),
		add("hedge-inline", func(tr *http.Transport) http.RoundTripper { return &inlineTransport{p: newPolicy(), next: tr} }),
		add("hedgehttp", func(tr *http.Transport) http.RoundTripper {
			ht, err := hedgehttp.NewTransport(hedgehttp.Config{Policy: hedge.Config{Trigger: hedge.After(noFireDelay)}, Next: tr})
			if err != nil {
				b.Fatal(err)
			}
			return ht
		}),
		add("hedgedhttp", func(tr *http.Transport) http.RoundTripper {
			rt, err := hedgedhttp.NewRoundTripper(noFireDelay, 2, tr)
			if err != nil {
				b.Fatal(err)
			}
			return rt
		}),
	}
	defer func() {
		for _, s := range sides {
			s.closeIdl()
		}
	}()
	get := func(c *http.Client) error { return getOK(c, srv.URL) }
	const block = 50
	run := func(s *side, timed bool) {
		t0, c0 := time.Now(), cpuTime()
		for range block {
			if err := get(s.client); err != nil {
				b.Fatal(err)
			}
		}
		if timed {
			s.wall += time.Since(t0)
			s.cpu += cpuTime() - c0
			s.calls += block
		}
	}
	for range 20 { // connections open, estimators and pools warm
		for _, s := range sides {
			run(s, false)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for j := range sides {
			run(sides[(i+j)%len(sides)], true)
		}
		i++
	}
	b.StopTimer()
	per := map[string][2]float64{}
	for _, s := range sides {
		w, c := float64(s.wall)/float64(s.calls), float64(s.cpu)/float64(s.calls)
		per[s.name] = [2]float64{w, c}
		b.ReportMetric(w, s.name+"-ns/call")
		b.ReportMetric(c, s.name+"-cpu-ns/call")
	}
	h, p, d := per["hedgehttp"], per["plain"], per["hedgedhttp"]
	b.ReportMetric(100*p[0]/h[0], "hedgehttp-%-of-plain")
	b.ReportMetric(100*p[1]/h[1], "hedgehttp-cpu-%-of-plain")
	b.ReportMetric(d[0]/h[0], "hedgehttp-x-hedgedhttp")
	b.ReportMetric(d[1]/h[1], "hedgehttp-cpu-x-hedgedhttp")
}
