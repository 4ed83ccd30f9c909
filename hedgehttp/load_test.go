package hedgehttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/workqueue"
)

// TestReportValueSharesSteadyReports: a response with nobody queued and no wait of its own
// carries one shared string for its count of busy workers, the one FormatLoad makes; any
// other response, or a busy count past maxSteadyReports, is formatted on its own. A queue
// without the per-response report shares them too, for its load stream's lines.
func TestReportValueSharesSteadyReports(t *testing.T) {
	for _, cfg := range []QueueConfig{{Workers: 4}, {Workers: maxSteadyReports + 2}, {Workers: 4, NoLoadReport: true}} {
		workers := cfg.Workers
		q, err := NewQueue(http.NotFoundHandler(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []workqueue.Load{
			{Busy: 0, Workers: workers},
			{Busy: 3, Workers: workers},
			{Busy: workers, Workers: workers},
			{Queued: 2, Busy: workers, Workers: workers},
			{Busy: 1, Workers: workers, Wait: 2 * time.Millisecond},
			{Busy: 1, Workers: workers, Wait: time.Microsecond},
			{Busy: 1, Workers: workers, Wait: 999 * time.Nanosecond}, // FormatLoad shows µs: no wait
		} {
			first, again := q.reportValue(l), q.reportValue(l)
			if want := FormatLoad(l); first != want || again != want {
				t.Fatalf("workers %d, %+v: reportValue = %q, then %q; want FormatLoad's %q", workers, l, first, again, want)
			}
			steady := l.Queued == 0 && l.Wait < time.Microsecond && l.Busy <= maxSteadyReports
			if shared := unsafe.StringData(first) == unsafe.StringData(again); shared != steady {
				t.Errorf("workers %d, %+v: the same string twice = %v, want %v", workers, l, shared, steady)
			}
		}
	}
}

func TestFormatParseLoad(t *testing.T) {
	for _, tc := range []struct {
		l    workqueue.Load
		want string
	}{
		{workqueue.Load{Queued: 3, Busy: 16, Workers: 16, Wait: 12500 * time.Microsecond}, "queued=3, busy=16, workers=16, wait=12.5"},
		{workqueue.Load{Busy: 1, Workers: 4}, "busy=1, workers=4"},
		{workqueue.Load{Queued: 2, Workers: 4}, "queued=2, workers=4"},
		{workqueue.Load{Workers: 4}, "workers=4"},
		{workqueue.Load{}, "workers=0"},
		{workqueue.Load{Wait: 7*time.Millisecond + 123*time.Microsecond}, "workers=0, wait=7.123"},
		{workqueue.Load{Wait: 40 * time.Microsecond}, "workers=0, wait=0.04"},
		{workqueue.Load{Wait: 999 * time.Nanosecond}, "workers=0"},
	} {
		got := FormatLoad(tc.l)
		if got != tc.want {
			t.Errorf("FormatLoad(%+v) = %q, want %q", tc.l, got, tc.want)
		}
		back, ok := ParseLoad(got)
		want := hedge.Load{Queued: tc.l.Queued, Busy: tc.l.Busy, Workers: tc.l.Workers, Wait: tc.l.Wait.Truncate(time.Microsecond)}
		if !ok || back != want {
			t.Errorf("ParseLoad(%q) = %+v, %v, want %+v", got, back, ok, want)
		}
	}
}

func TestParseLoad(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want hedge.Load
		ok   bool
	}{
		{"queued=2", hedge.Load{Queued: 2}, true},
		{" workers=8 ,queued=1;x=1, future=?1 ", hedge.Load{Queued: 1, Workers: 8}, true},
		{"wait=1.5", hedge.Load{Wait: 1500 * time.Microsecond}, true},
		{"wait=1.001", hedge.Load{Wait: 1001 * time.Microsecond}, true}, // not a nanosecond short
		{"wait=0.0000004", hedge.Load{}, true},                          // 0.4 ns: 0, a wait of none
		{"", hedge.Load{}, false},
		{"other=1", hedge.Load{}, false},
		{"queued=-1", hedge.Load{}, false},
		{"queued=x", hedge.Load{}, false},
		{"busy=1, wait=-3", hedge.Load{}, false},
		{"wait=1e300", hedge.Load{}, false},
		{"busy=1, wait=NaN", hedge.Load{}, false},
		{"queued=99999999999999999999", hedge.Load{}, false},
		// A string of a key to come is one member, commas and all.
		{`queued=1, note="a, queued=x"`, hedge.Load{Queued: 1}, true},
		{`queued=1, note="x,queued=999,y", busy=2`, hedge.Load{Queued: 1, Busy: 2}, true},
		{`note="a \", queued=7", workers=4`, hedge.Load{Workers: 4}, true},
	} {
		got, ok := ParseLoad(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseLoad(%q) = %+v, %v, want %+v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseLoad: ParseLoad reads any value without panicking, and what it accepts is a load
// the core can use (no negative figure, a wait within bounds); FormatLoad's value for any load
// reads back as that load, its wait to the microsecond FormatLoad writes.
func FuzzParseLoad(f *testing.F) {
	f.Add("queued=3, busy=16, workers=16, wait=12.5", uint32(3), uint16(16), uint16(16), int64(12500))
	f.Add(" workers=8 ,queued=1;x=1, future=?1 ", uint32(0), uint16(1), uint16(4), int64(1001))
	f.Add("wait=1e300, busy=x", uint32(1<<31), uint16(0), uint16(0), int64(-5))
	f.Fuzz(func(t *testing.T, v string, queued uint32, busy, workers uint16, waitUs int64) {
		if l, ok := ParseLoad(v); ok {
			if l.Queued < 0 || l.Busy < 0 || l.Workers < 0 || l.Wait < 0 || l.Wait > 1e9*time.Millisecond {
				t.Fatalf("ParseLoad(%q) accepted %+v", v, l)
			}
		} else if l != (hedge.Load{}) {
			t.Fatalf("ParseLoad(%q) refused it but returned %+v", v, l)
		}
		in := workqueue.Load{Queued: int(min(queued, math.MaxInt32)), Busy: int(busy), Workers: int(workers),
			Wait: time.Duration(min(max(waitUs, 0), 1e12)) * time.Microsecond}
		s := FormatLoad(in)
		back, ok := ParseLoad(s)
		want := hedge.Load{Queued: in.Queued, Busy: in.Busy, Workers: in.Workers, Wait: in.Wait}
		if !ok || back != want {
			t.Fatalf("FormatLoad(%+v) = %q, read back as %+v, %v", in, s, back, ok)
		}
	})
}

// TestQueueNetLoadHeader checks, over real connections, that every response of a request the
// queue ran reports the queue as it stood when the response left, whether the handler writes a
// body, only a status, or nothing; that an informational response carries none; and that
// NoLoadReport turns the header off.
func TestQueueNetLoadHeader(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			release := make(chan struct{})
			started := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/slow":
					close(started)
					select {
					case <-release:
					case <-time.After(10 * time.Second): // bound: never hang the test
					}
					io.WriteString(w, "slow")
				case "/status":
					w.WriteHeader(http.StatusAccepted)
				case "/nothing":
				}
			})
			q := mustQueue(t, h, QueueConfig{Workers: 1, Queue: 4})
			srv, tr := startServer(t, proto, q)
			client := &http.Client{Transport: tr}
			get := func(path string, hdr http.Header) *http.Response {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				for k, v := range hdr {
					req.Header[k] = v
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return nil
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			load := func(resp *http.Response) hedge.Load {
				t.Helper()
				l, ok := ParseLoad(resp.Header.Get(LoadHeader))
				if !ok {
					t.Fatalf("%s: no load report in %q", resp.Request.URL.Path, resp.Header.Get(LoadHeader))
				}
				return l
			}

			slow := make(chan *http.Response, 1)
			go func() { slow <- get("/slow", nil) }()
			<-started
			waiting := make(chan *http.Response, 1)
			go func() { waiting <- get("/status", nil) }()
			if !waitFor(10*time.Second, func() bool { return q.Stats().Queued == 1 }) {
				t.Fatal("the second request never queued")
			}
			close(release)
			if l := load(<-slow); l != (hedge.Load{Queued: 1, Busy: 1, Workers: 1}) {
				t.Fatalf("/slow reported %+v, want the waiting request behind it", l)
			}
			st := <-waiting
			if st.StatusCode != http.StatusAccepted {
				t.Fatalf("/status: %s", st.Status)
			}
			if l := load(st); l.Queued != 0 || l.Busy != 1 || l.Workers != 1 || l.Wait <= 0 {
				t.Fatalf("/status reported %+v, want an empty queue and its own wait", l)
			}
			if l := load(get("/nothing", nil)); l.Busy != 1 || l.Wait != 0 {
				t.Fatalf("/nothing reported %+v", l)
			}

			// The start signal (a 1xx) goes out before the handler runs: it carries no report.
			var early []string
			req, _ := http.NewRequest("GET", srv.URL+"/nothing", nil)
			req.Header.Set(StartSignalHeader, "1")
			tr2 := tr.Clone()
			defer tr2.CloseIdleConnections()
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
				Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
					early = append(early, h[LoadHeader]...)
					return nil
				},
			}))
			resp, err := tr2.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(early) != 0 || resp.Header.Get(LoadHeader) == "" {
				t.Fatalf("1xx carried %q; final response %q", early, resp.Header.Get(LoadHeader))
			}

			off := mustQueue(t, h, QueueConfig{Workers: 1, NoLoadReport: true})
			srv2, tr3 := startServer(t, proto, off)
			resp, err = (&http.Client{Transport: tr3}).Get(srv2.URL + "/nothing")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if v := resp.Header.Get(LoadHeader); v != "" {
				t.Fatalf("NoLoadReport: header %q", v)
			}
		})
	}
}

// TestTransportReadsLoadHeader checks that a Transport hands each response's report to the
// host's policy and to the replica it came from.
func TestTransportReadsLoadHeader(t *testing.T) {
	checkGoroutines(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	q := mustQueue(t, h, QueueConfig{Workers: 3})
	srv, base := startServer(t, "HTTP/1.1", q)
	u, _ := url.Parse(srv.URL)
	addrs := []string{u.Host}
	tr, err := NewTransport(Config{
		Policy:   hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		Next:     base,
		Replicas: func(string) []string { return addrs },
	})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	key := "http://" + u.Host
	p := tr.Policy(key)
	if p == nil {
		t.Fatalf("no policy for %q", key)
	}
	if q, w, ok := p.ServerQueue(time.Now()); !ok || q != 0 || w != 3 {
		t.Fatalf("policy: ServerQueue = %d, %d, %v; want the report (0 queued of 3 workers)", q, w, ok)
	}
	if _, _, ok := p.ServerQueue(before.Add(time.Minute)); ok {
		t.Fatal("policy: a report a minute old still counts")
	}
	if l, ok := tr.Replicas(key).Set().Load(time.Now(), 0); !ok || l.Queued != 0 || l.Workers != 3 || l.Busy < 1 {
		t.Fatalf("replica: Load = %+v, %v; want the report (0 queued, its own request busy, of 3 workers)", l, ok)
	}
}

// TestGroupedHostsShareOneReport: without replicas, a key grouping two hosts is one server
// to the load reports, as Config.Key says: each response's report replaces the key's latest,
// whichever host sent it.
func TestGroupedHostsShareOneReport(t *testing.T) {
	checkGoroutines(t)
	report := func(v string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(LoadHeader, v)
		})
	}
	long, base := startServer(t, "HTTP/1.1", report("queued=6, busy=4, workers=4"))
	idle, _ := startServer(t, "HTTP/1.1", report("busy=1, workers=4"))
	tr, err := NewTransport(Config{
		Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		Next:   base,
		Key:    func(*http.Request) string { return "grouped" },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	for _, step := range []struct {
		url    string
		queued int
	}{{long.URL, 6}, {idle.URL, 0}, {long.URL, 6}} {
		resp, err := c.Get(step.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if q, w, ok := tr.Policy("grouped").ServerQueue(time.Now()); !ok || q != step.queued || w != 4 {
			t.Fatalf("after a call to %s: ServerQueue = %d, %d, %v; want %d queued of 4 workers", step.url, q, w, ok, step.queued)
		}
	}
}

// TestTransportRoutesFirstAttemptsByLoad: two real replicas, one of whose workers are mostly
// taken by another client's requests, which this Transport cannot count as its own. Once both
// have reported, the Transport's first attempts go to the one that reported room, while that
// report is fresh (replica.RouteMaxAge), though neither has an attempt of its own outstanding.
func TestTransportRoutesFirstAttemptsByLoad(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	var hitsA, hitsB atomic.Int32
	var lastA atomic.Int64 // unix ns of A's latest answer to the Transport
	ha := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
			return
		}
		hitsA.Add(1)
		lastA.Store(time.Now().UnixNano())
	})
	hb := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hitsB.Add(1) })
	qa := mustQueue(t, ha, QueueConfig{Workers: 3})
	srvA, base := startServer(t, "HTTP/1.1", qa)
	srvB, _ := startServer(t, "HTTP/1.1", mustQueue(t, hb, QueueConfig{Workers: 3}))
	// Another client holds two of A's three workers.
	other := &http.Client{Transport: &http.Transport{}}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if resp, err := other.Get(srvA.URL + "/hold"); err == nil {
				resp.Body.Close()
			}
		})
	}
	defer func() {
		close(release)
		wg.Wait()
		other.CloseIdleConnections()
	}()
	if !waitFor(5*time.Second, func() bool { return qa.Stats().Running == 2 }) {
		t.Fatal("the other client's requests did not start")
	}
	ua, _ := url.Parse(srvA.URL)
	ub, _ := url.Parse(srvB.URL)
	addrs := []string{ua.Host, ub.Host}
	tr, err := NewTransport(Config{Policy: hedge.Config{}, Next: base, Replicas: func(string) []string { return addrs }})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	get := func() {
		resp, err := client.Get(srvA.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Calls until each replica has answered one, and so reported.
	for i := 0; hitsA.Load() == 0 || hitsB.Load() == 0; i++ {
		if i == 200 {
			t.Fatalf("200 calls reached replica A %d and B %d times, want both", hitsA.Load(), hitsB.Load())
		}
		get()
	}
	set := tr.Replicas("http://" + ua.Host).Set()
	if l, ok := set.Load(time.Now(), 0); !ok || l.Busy != 3 {
		t.Fatalf("replica A's report %+v (%v), want its 3 workers busy", l, ok)
	}
	// Calls sent while A's report is fresh go to B (1 busy of 3 against 3 of 3). Counted only
	// while well inside RouteMaxAge of A's last answer, so that a slow machine cannot fail it.
	fresh, toA := 0, 0
	for range 50 {
		if time.Since(time.Unix(0, lastA.Load())) > replica.RouteMaxAge/2 {
			break
		}
		before := hitsA.Load()
		get()
		fresh++
		if hitsA.Load() != before {
			toA++
		}
	}
	if fresh < 5 {
		t.Skipf("only %d calls fitted in %v of replica A's report", fresh, replica.RouteMaxAge/2)
	}
	t.Logf("%d calls while replica A's report was fresh, %d to A", fresh, toA)
	if toA > 0 {
		t.Fatalf("%d of %d first attempts went to the replica that reported all its workers busy", toA, fresh)
	}
}

// unwrapOnly is a middleware's writer of the Go 1.20 kind: no Flush of its own, only Unwrap.
type unwrapOnly struct{ http.ResponseWriter }

func (u *unwrapOnly) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// A streaming handler behind a Queue flushes through http.ResponseController, with or without
// the load report: the flush reaches the client through a middleware's writer that has only
// Unwrap, and once the client has gone a flush says so.
func TestQueueFlushes(t *testing.T) {
	for _, report := range []bool{true, false} {
		t.Run(fmt.Sprintf("report=%v", report), func(t *testing.T) {
			checkGoroutines(t)
			release := make(chan struct{})
			flushed := make(chan error, 1)
			gone := make(chan struct{})
			lastErr := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rc := http.NewResponseController(w)
				io.WriteString(w, "first\n")
				flushed <- rc.Flush()
				<-release
				if r.URL.Path != "/gone" {
					return
				}
				<-gone
				var err error
				for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); {
					if _, err = io.WriteString(w, "more\n"); err == nil {
						err = rc.Flush()
					}
					time.Sleep(time.Millisecond)
				}
				lastErr <- rc.Flush() // the write may fail first; the flush after it must too
			})
			q, err := NewQueue(h, QueueConfig{Workers: 2, NoLoadReport: !report})
			if err != nil {
				t.Fatal(err)
			}
			srv, tr := startServer(t, "HTTP/1.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				q.ServeHTTP(&unwrapOnly{w}, r)
			}))
			for _, path := range []string{"/", "/gone"} {
				// Bounded: without the flush, the response header stays in the server's buffer.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					close(release)
					t.Fatalf("%s: no response header within 5 s of a flush (%v)", path, err)
				}
				if err := <-flushed; err != nil {
					t.Fatalf("%s: a flush through an Unwrap-only writer: %v", path, err)
				}
				if got := resp.Header.Get(LoadHeader) != ""; got != report {
					t.Errorf("%s: load header present = %v, want %v", path, got, report)
				}
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if line != "first\n" {
					t.Fatalf("%s: read %q (%v) while the handler waits: the flush did not reach the client", path, line, err)
				}
				if path == "/gone" {
					resp.Body.Close()
					tr.CloseIdleConnections()
					close(release)
					close(gone)
					if err := <-lastErr; err == nil {
						t.Fatal("flushes to a client that has gone all succeeded")
					}
				} else {
					release <- struct{}{}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
}
