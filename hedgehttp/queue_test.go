package hedgehttp

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tests in this file drive a Queue directly (no network) inside synctest
// bubbles, so every ordering is deterministic. queue_net_test.go checks the
// same behaviour through real HTTP/1.1 and HTTP/2 servers.

// gate is a handler whose requests, named by their path, block until the test
// releases them; it records the order in which handlers start.
type gate struct {
	mu      sync.Mutex
	started []string
	release map[string]chan struct{}
	ctxErr  map[string]error
}

func newGate() *gate {
	return &gate{release: map[string]chan struct{}{}, ctxErr: map[string]error{}}
}

func (g *gate) ch(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.release[name]
	if !ok {
		c = make(chan struct{})
		g.release[name] = c
	}
	return c
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	g.mu.Lock()
	g.started = append(g.started, name)
	g.mu.Unlock()
	select {
	case <-g.ch(name):
	case <-r.Context().Done():
		g.mu.Lock()
		g.ctxErr[name] = r.Context().Err()
		g.mu.Unlock()
	}
	w.Write([]byte("ok " + name))
}

func (g *gate) order() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.started, ",")
}

// serve runs q.ServeHTTP for a request to path on its own goroutine, as
// net/http would, and returns the recorder and a channel closed when it is done.
func serve(ctx context.Context, q *Queue, path string, hedge string) (*httptest.ResponseRecorder, chan struct{}) {
	req := httptest.NewRequest("GET", "http://example.test"+path, nil).WithContext(ctx)
	if hedge != "" {
		req.Header.Set(AttemptHeader, hedge)
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.ServeHTTP(rec, req)
	}()
	return rec, done
}

func mustQueue(t *testing.T, h http.Handler, cfg QueueConfig) *Queue {
	t.Helper()
	q, err := NewQueue(h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestQueueFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 8})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		var dones []chan struct{}
		for _, p := range []string{"/b", "/c", "/d", "/e"} {
			_, d := serve(t.Context(), q, p, "")
			synctest.Wait() // each enters the queue before the next arrives
			dones = append(dones, d)
		}
		if s := q.Stats(); s.Running != 1 || s.Queued != 4 {
			t.Fatalf("Stats = %+v, want Running 1, Queued 4", s)
		}
		time.Sleep(time.Second) // fake time: the waiters' wait is measured
		for _, p := range []string{"/a", "/b", "/c", "/d", "/e"} {
			close(g.ch(p))
			synctest.Wait()
		}
		<-doneA
		for _, d := range dones {
			<-d
		}
		if got, want := g.order(), "/a,/b,/c,/d,/e"; got != want {
			t.Errorf("handlers started in order %s, want %s", got, want)
		}
		s := q.Stats()
		if s.Admitted != 5 || s.Running != 0 || s.Queued != 0 {
			t.Errorf("Stats = %+v, want Admitted 5, nothing running or queued", s)
		}
		if s.WaitMax < time.Second || s.WaitTotal < 4*time.Second {
			t.Errorf("WaitMax %v, WaitTotal %v; want >= 1s, >= 4s", s.WaitMax, s.WaitTotal)
		}
	})
}

func TestQueueCancelledWaiterNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		var events []QueueEvent
		var mu sync.Mutex
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 4, Observer: func(e QueueEvent) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		recB, doneB := serve(ctx, q, "/b", "")
		_, doneC := serve(t.Context(), q, "/c", "")
		synctest.Wait()
		cancel()
		<-doneB // B leaves the queue while A still runs
		if recB.Code != http.StatusServiceUnavailable {
			t.Errorf("abandoned request answered %d, want 503", recB.Code)
		}
		if s := q.Stats(); s.Abandoned != 1 || s.Queued != 1 {
			t.Errorf("after cancel Stats = %+v, want Abandoned 1, Queued 1", s)
		}
		close(g.ch("/a"))
		<-doneA
		synctest.Wait() // /c has A's worker and waits at its gate
		close(g.ch("/c"))
		<-doneC
		if got, want := g.order(), "/a,/c"; got != want {
			t.Errorf("handlers ran %s, want %s (the cancelled /b must never run)", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		var kinds []string
		for _, e := range events {
			kinds = append(kinds, e.Kind.String())
		}
		// A's worker goes to C before A reports that it finished, each on its own goroutine:
		// those two events may come in either order.
		if len(kinds) == 5 && kinds[2] == "admitted" && kinds[3] == "finished" {
			kinds[2], kinds[3] = kinds[3], kinds[2]
		}
		if got, want := strings.Join(kinds, ","), "admitted,abandoned,finished,admitted,finished"; got != want {
			t.Errorf("events %s, want %s (the middle two in either order)", got, want)
		}
	})
}

func TestQueueRunningSeesCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1})
		ctx, cancel := context.WithCancel(t.Context())
		_, done := serve(ctx, q, "/a", "")
		synctest.Wait()
		cancel()
		<-done
		if err := g.ctxErr["/a"]; !errors.Is(err, context.Canceled) {
			t.Errorf("running handler saw ctx error %v, want context.Canceled", err)
		}
		if s := q.Stats(); s.Cancelled != 1 || s.Running != 0 {
			t.Errorf("Stats = %+v, want Cancelled 1, Running 0", s)
		}
	})
}

func TestQueueFullRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 1, RetryAfter: 1500 * time.Millisecond})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		_, doneB := serve(t.Context(), q, "/b", "")
		synctest.Wait()
		recC, doneC := serve(t.Context(), q, "/c", "")
		<-doneC
		if recC.Code != http.StatusServiceUnavailable || recC.Header().Get("Retry-After") != "2" {
			t.Errorf("full queue answered %d Retry-After %q, want 503 and \"2\"", recC.Code, recC.Header().Get("Retry-After"))
		}
		close(g.ch("/a"))
		close(g.ch("/b"))
		<-doneA
		<-doneB
		if s := q.Stats(); s.Rejected != 1 || s.Admitted != 2 {
			t.Errorf("Stats = %+v, want Rejected 1, Admitted 2", s)
		}
	})
}

// Retry-After is RetryAfter in whole seconds, rounded up, up to the largest Duration: a
// RetryAfter meant as "for good" must not wrap round to a negative number, which no client
// reads as a pause.
func TestQueueRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		ra   time.Duration
		want string
	}{{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"}, {time.Second + 1, "2"}, {math.MaxInt64, "9223372037"}} {
		q, err := NewQueue(http.NotFoundHandler(), QueueConfig{RetryAfter: c.ra})
		if err != nil {
			t.Fatal(err)
		}
		if q.retryAfter != c.want {
			t.Errorf("RetryAfter %v: Retry-After %q, want %q", c.ra, q.retryAfter, c.want)
		}
		if _, ok := parseRetryAfter(q.retryAfter, time.Now()); !ok {
			t.Errorf("RetryAfter %v: a Transport does not read Retry-After %q", c.ra, q.retryAfter)
		}
	}
}

func TestQueueNoWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: -1})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		recB, doneB := serve(t.Context(), q, "/b", "")
		<-doneB
		if recB.Code != http.StatusServiceUnavailable || recB.Header().Get("Retry-After") != "1" {
			t.Errorf("busy worker answered %d Retry-After %q, want 503 and \"1\"", recB.Code, recB.Header().Get("Retry-After"))
		}
		close(g.ch("/a"))
		<-doneA
	})
}

func TestQueueHedgedLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 3, HedgedLast: true})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		_, doneH := serve(t.Context(), q, "/h", "1")
		synctest.Wait()
		_, doneP := serve(t.Context(), q, "/p", "")
		synctest.Wait()
		_, doneZ := serve(t.Context(), q, "/z", "0") // "0" is a first attempt
		synctest.Wait()
		if s := q.Stats(); s.Queued != 3 || s.QueuedHedged != 1 {
			t.Fatalf("Stats = %+v, want Queued 3, QueuedHedged 1", s)
		}
		for _, p := range []string{"/a", "/p", "/z", "/h"} {
			close(g.ch(p))
			synctest.Wait()
		}
		for _, d := range []chan struct{}{doneA, doneH, doneP, doneZ} {
			<-d
		}
		if got, want := g.order(), "/a,/p,/z,/h"; got != want {
			t.Errorf("handlers ran %s, want %s (hedged request after first attempts)", got, want)
		}
	})
}

func TestQueueFirstAttemptEvictsHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 2, HedgedLast: true})
		_, doneA := serve(t.Context(), q, "/a", "")
		synctest.Wait()
		_, doneH1 := serve(t.Context(), q, "/h1", "1")
		synctest.Wait()
		recH2, doneH2 := serve(t.Context(), q, "/h2", "2")
		synctest.Wait()
		// The queue is full of hedges: a further hedge is rejected...
		recH3, doneH3 := serve(t.Context(), q, "/h3", "1")
		<-doneH3
		if recH3.Code != http.StatusServiceUnavailable {
			t.Errorf("hedge into a full queue answered %d, want 503", recH3.Code)
		}
		// ...but a first attempt pushes out the newest hedge.
		_, doneP := serve(t.Context(), q, "/p", "")
		<-doneH2
		if recH2.Code != http.StatusServiceUnavailable || recH2.Header().Get("Retry-After") == "" {
			t.Errorf("evicted hedge answered %d Retry-After %q, want 503 with Retry-After", recH2.Code, recH2.Header().Get("Retry-After"))
		}
		synctest.Wait()
		for _, p := range []string{"/a", "/p", "/h1"} {
			close(g.ch(p))
			synctest.Wait()
		}
		for _, d := range []chan struct{}{doneA, doneH1, doneP} {
			<-d
		}
		if got, want := g.order(), "/a,/p,/h1"; got != want {
			t.Errorf("handlers ran %s, want %s", got, want)
		}
		if s := q.Stats(); s.Evicted != 1 || s.Rejected != 1 || s.Admitted != 3 {
			t.Errorf("Stats = %+v, want Evicted 1, Rejected 1, Admitted 3", s)
		}
	})
}

func TestQueueHandlerPanicReleasesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran int
		q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran++
			if r.URL.Path == "/panic" {
				panic(http.ErrAbortHandler)
			}
		}), QueueConfig{Workers: 1, Queue: -1})
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the handler's panic did not reach the caller")
				}
			}()
			q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/panic", nil))
		}()
		rec := httptest.NewRecorder()
		q.ServeHTTP(rec, httptest.NewRequest("GET", "/ok", nil))
		if rec.Code != http.StatusOK || ran != 2 {
			t.Errorf("after a panic: code %d, handler runs %d; want 200 and 2 (the slot must come back)", rec.Code, ran)
		}
	})
}

func TestNewQueueValidation(t *testing.T) {
	h := http.NotFoundHandler()
	for _, tc := range []struct {
		cfg  QueueConfig
		h    http.Handler
		want string
	}{
		{QueueConfig{Workers: -1}, h, "QueueConfig.Workers must be >= 0, got -1"},
		{QueueConfig{RetryAfter: -time.Second}, h, "QueueConfig.RetryAfter must be >= 0, got -1s"},
		{QueueConfig{}, nil, "handler must not be nil"},
	} {
		_, err := NewQueue(tc.h, tc.cfg)
		if !errors.Is(err, ErrQueueConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewQueue(%+v) = %v, want an ErrQueueConfig naming %q", tc.cfg, err, tc.want)
		}
	}
	q := mustQueue(t, h, QueueConfig{Workers: 3})
	if s := q.Stats(); s.Workers != 3 || s.Capacity != 3 {
		t.Errorf("defaults: Stats = %+v, want Workers 3, Capacity 3 (Queue 0 = Workers)", s)
	}
	q = mustQueue(t, h, QueueConfig{})
	if s := q.Stats(); s.Workers < 4 {
		t.Errorf("default Workers = %d, want 4 × GOMAXPROCS", s.Workers)
	}
}
