package hedgehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// flushRecorder is a ResponseWriter that can flush and be read while its handler runs.
type flushRecorder struct {
	mu      sync.Mutex
	header  http.Header
	code    int
	body    strings.Builder
	flushes int
}

func (r *flushRecorder) Header() http.Header { return r.header }
func (r *flushRecorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code == 0 {
		r.code = code
	}
}
func (r *flushRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *flushRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
}

// lines returns the lines written so far and how many flushes there were.
func (r *flushRecorder) lines() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.TrimSuffix(r.body.String(), "\n")
	if s == "" {
		return nil, r.flushes
	}
	return strings.Split(s, "\n"), r.flushes
}

// serveStream runs ls on a GET of target on a goroutine of its own, with a context the returned
// function cancels, and returns the recorder and a channel closed when the handler returns.
func serveStream(ls *LoadStream, target string) (*flushRecorder, context.CancelFunc, chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	rec := &flushRecorder{header: http.Header{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ls.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx))
	}()
	return rec, cancel, done
}

// A stream sends a report at once and then one per interval, never more often than the
// handler's minimum, each a LoadHeader value of the queue as it stands; it ends with its
// client's context.
func TestLoadStreamInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		q, err := NewQueue(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }), QueueConfig{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		ls, err := q.LoadStream(50 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			query string
			every time.Duration
		}{
			{"", 50 * time.Millisecond},              // the minimum
			{"?interval=1ms", 50 * time.Millisecond}, // asked for less than the minimum
			{"?interval=80ms", 80 * time.Millisecond},
			{"?interval=1h", longestLoadInterval}, // never less often: a write finds a client gone, and the next report comes while the last counts
		} {
			rec, cancel, done := serveStream(ls, LoadStreamPath+tc.query)
			synctest.Wait()
			if got, _ := rec.lines(); len(got) != 1 {
				t.Fatalf("%q: %d lines at once, want 1: %q", tc.query, len(got), got)
			}
			time.Sleep(3*tc.every - time.Millisecond)
			synctest.Wait()
			if got, _ := rec.lines(); len(got) != 3 {
				t.Fatalf("%q: %d lines after %v, want 3 (one every %v): %q", tc.query, len(got), 3*tc.every-time.Millisecond, tc.every, got)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			got, flushes := rec.lines()
			if len(got) != 4 || flushes != 4 {
				t.Fatalf("%q: %d lines and %d flushes after %v, want 4 of each", tc.query, len(got), flushes, 3*tc.every)
			}
			for _, line := range got {
				if line != "workers=2" {
					t.Fatalf("%q: line %q, want %q", tc.query, line, "workers=2")
				}
			}
			if ct := rec.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || rec.code != http.StatusOK {
				t.Fatalf("%q: status %d, Content-Type %q", tc.query, rec.code, ct)
			}
			cancel()
			<-done
		}

		// The reports follow the queue: a request in service, one waiting.
		for range 3 {
			go q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		}
		synctest.Wait()
		rec, cancel, done := serveStream(ls, LoadStreamPath)
		synctest.Wait()
		got, _ := rec.lines()
		if len(got) != 1 || got[0] != "queued=1, busy=2, workers=2" {
			t.Fatalf("busy queue: lines %q, want [\"queued=1, busy=2, workers=2\"]", got)
		}
		l, ok := ParseLoad(got[0])
		if !ok || l.Queued != 1 || l.Busy != 2 || l.Workers != 2 || l.Wait != 0 {
			t.Fatalf("ParseLoad(%q) = %+v, %v", got[0], l, ok)
		}
		if s := q.Stats(); s.Running != 2 || s.Queued != 1 {
			t.Fatalf("the stream took a worker or a place: %+v", s)
		}
		close(release)
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if got, _ := rec.lines(); len(got) != 2 || got[1] != "workers=2" {
			t.Fatalf("after the queue emptied: lines %q, want a second \"workers=2\"", got)
		}
		cancel()
		<-done
	})
}

// A stream refuses what it cannot serve, and Close ends every open stream and refuses new ones.
func TestLoadStreamRefusesAndCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewQueue(http.NotFoundHandler(), QueueConfig{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.LoadStream(-time.Millisecond); !errors.Is(err, ErrQueueConfig) {
			t.Fatalf("LoadStream(-1ms) = %v, want ErrQueueConfig", err)
		}
		ls, err := q.LoadStream(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			method, target, body string
			code                 int
		}{
			{http.MethodPost, LoadStreamPath, "", http.StatusMethodNotAllowed},
			{http.MethodGet, LoadStreamPath + "?interval=soon", "", http.StatusBadRequest},
			{http.MethodGet, LoadStreamPath + "?interval=-5ms", "", http.StatusBadRequest},
			// net/http stops watching a connection whose unread body is long: its client could
			// hang up unseen.
			{http.MethodGet, LoadStreamPath, "a body", http.StatusBadRequest},
		} {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			ctx, cancel := context.WithCancel(t.Context())
			req := httptest.NewRequestWithContext(ctx, tc.method, tc.target, body)
			rec := &flushRecorder{header: http.Header{}}
			done := make(chan struct{})
			go func() { defer close(done); ls.ServeHTTP(rec, req) }()
			synctest.Wait()
			rec.mu.Lock()
			code := rec.code
			rec.mu.Unlock()
			cancel() // a stream answered by mistake ends here
			<-done
			if code != tc.code {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.target, code, tc.code)
			}
		}

		rec1, cancel1, done1 := serveStream(ls, LoadStreamPath)
		defer cancel1()
		rec2, cancel2, done2 := serveStream(ls, LoadStreamPath+"?interval=1s")
		defer cancel2()
		time.Sleep(2 * DefaultLoadStreamMinInterval)
		synctest.Wait()
		if got, _ := rec1.lines(); len(got) != 3 {
			t.Fatalf("default minimum: %d lines after %v, want 3", len(got), 2*DefaultLoadStreamMinInterval)
		}
		ls.Close()
		// Close returns once both handlers have, but done closes after the handler has
		// returned, on the goroutine serveStream started, which may not have run yet
		// (TestLoadStreamCloseWaits checks that Close waits).
		synctest.Wait()
		for i, done := range []chan struct{}{done1, done2} {
			select {
			case <-done:
			default:
				t.Fatalf("stream %d still open after Close", i+1)
			}
		}
		if got, _ := rec2.lines(); len(got) != 1 {
			t.Fatalf("a 1s stream closed early: %d lines, want 1", len(got))
		}
		rec := httptest.NewRecorder()
		ls.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, LoadStreamPath, nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("after Close: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
		ls.Close() // again: nothing
	})
}

// stallRecorder is a flushRecorder whose Flush blocks until release is closed: a client that
// has stopped reading.
type stallRecorder struct {
	flushRecorder
	release chan struct{}
}

func (r *stallRecorder) Flush() {
	<-r.release
	r.flushRecorder.Flush()
}

// Close returns only once every stream's handler has returned, even one stuck writing.
func TestLoadStreamCloseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewQueue(http.NotFoundHandler(), QueueConfig{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ls, err := q.LoadStream(0)
		if err != nil {
			t.Fatal(err)
		}
		rec := &stallRecorder{flushRecorder: flushRecorder{header: http.Header{}}, release: make(chan struct{})}
		handled := make(chan struct{})
		go func() {
			defer close(handled)
			ls.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, LoadStreamPath, nil))
		}()
		synctest.Wait() // the handler is in its first Flush
		closed := make(chan struct{})
		go func() { defer close(closed); ls.Close() }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a stream's handler was still writing")
		default:
		}
		close(rec.release)
		synctest.Wait()
		select {
		case <-closed:
		default:
			t.Fatal("Close still waiting once the handler could return")
		}
		select {
		case <-handled:
		default:
			t.Fatal("the handler still running after Close")
		}
		if got, flushes := rec.lines(); len(got) != 1 || flushes != 1 {
			t.Fatalf("%d lines and %d flushes, want 1 of each", len(got), flushes)
		}
	})
}

// NewTransport checks the load stream's fields.
func TestLoadStreamConfig(t *testing.T) {
	for _, cfg := range []Config{
		{LoadReportInterval: -time.Millisecond},
		{LoadReportInterval: time.Second, LoadStreamPath: "load"},
		{LoadReportInterval: time.Second, LoadStreamPath: "/a load"},
		{LoadStreamPath: "/x?y"},
	} {
		if _, err := NewTransport(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("NewTransport(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	tr, err := NewTransport(Config{LoadStreamPath: "/internal/load"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.streams != nil {
		t.Fatal("LoadReportInterval 0 opened streams")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// A stream that fails is opened again after a wait that doubles up to its cap, starts over
// once reports come, and is a minute for a server without a stream.
func TestLoadStreamRetryWait(t *testing.T) {
	var w time.Duration
	var got []time.Duration
	for range 9 {
		w = retryWait(w, false, false)
		got = append(got, w)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("failing stream waits %v, want %v", got, want)
	}
	if w := retryWait(10*time.Second, true, false); w != loadStreamRetryMin {
		t.Fatalf("after reports: %v, want %v", w, loadStreamRetryMin)
	}
	if w := retryWait(0, false, true); w != time.Minute {
		t.Fatalf("no stream on the server: %v, want 1m", w)
	}
	if w := retryWait(time.Minute, false, false); w != loadStreamRetryMin {
		t.Fatalf("a failure after an absent server: %v, want %v", w, loadStreamRetryMin)
	}
}

// noFlushWriter is a ResponseWriter that cannot flush (as some middleware wraps one).
type noFlushWriter struct {
	h    http.Header
	n    int
	code int
}

func (w *noFlushWriter) Header() http.Header         { return w.h }
func (w *noFlushWriter) WriteHeader(code int)        { w.code = code }
func (w *noFlushWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// A stream behind a writer that cannot flush ends after its first report instead of holding
// a request that sends nothing.
func TestLoadStreamWithoutFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewQueue(http.NotFoundHandler(), QueueConfig{Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		ls, err := q.LoadStream(0)
		if err != nil {
			t.Fatal(err)
		}
		w := &noFlushWriter{h: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ls.ServeHTTP(w, httptest.NewRequest(http.MethodGet, LoadStreamPath, nil))
		}()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("a stream that cannot flush is still open")
		}
		if w.code != http.StatusOK || w.n != len("workers=3\n") {
			t.Fatalf("status %d, %d bytes; want 200 and one report", w.code, w.n)
		}
	})
}
