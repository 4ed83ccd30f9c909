package hedgehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
)

// A server whose Queue wraps the whole mux, the load stream's route among the rest, is the
// usual middleware shape. A stream holds its request open for as long as its client keeps
// it, so through a worker it would hold that worker for good: with as many clients as
// workers, no request would run again. The stream gives its worker back as it starts. The
// path itself is no way past the queue: a request for it that another handler serves (the
// stream built but mounted elsewhere, or not at all) keeps its worker.
func TestLoadStreamBehindItsQueueHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		mux := http.NewServeMux()
		mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		mux.Handle("/hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		// One worker and no waiting: a request that finds the worker busy is answered 503.
		q, err := NewQueue(mux, QueueConfig{Workers: 1, Queue: -1})
		if err != nil {
			t.Fatal(err)
		}
		ls, err := q.LoadStream(0)
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle(LoadStreamPath, ls) // behind the queue

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rec := &flushRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, LoadStreamPath, nil))
		}()
		synctest.Wait() // the stream has written its first report and waits for the next
		if got, _ := rec.lines(); len(got) != 1 {
			t.Fatalf("the stream wrote %q, want one report", got)
		}
		if s := q.Stats(); s.Running != 0 || s.Admitted != 1 {
			t.Errorf("an open load stream: %d handlers running, %d admitted; want 0 running (it gave its worker back), 1 admitted", s.Running, s.Admitted)
		}
		call := httptest.NewRecorder()
		q.ServeHTTP(call, httptest.NewRequest(http.MethodGet, "/", nil))
		if call.Code != http.StatusOK {
			t.Errorf("a request beside the open stream: %d %q, want 200", call.Code, call.Body.String())
		}
		// The worker went back once: a request that holds it now leaves none, and the
		// stream's own end gives nothing back twice.
		held := make(chan struct{})
		go func() {
			defer close(held)
			q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/hold", nil))
		}()
		synctest.Wait()
		cancel()
		<-done
		synctest.Wait()
		if s := q.Stats(); s.Running != 1 {
			t.Errorf("after the stream ended, %d handlers running, want 1 (the held request)", s.Running)
		}
		full := httptest.NewRecorder()
		q.ServeHTTP(full, httptest.NewRequest(http.MethodGet, "/", nil))
		if full.Code != http.StatusServiceUnavailable {
			t.Errorf("a request while the only worker is held: %d, want 503 (the stream gave its worker back twice)", full.Code)
		}
		close(release)
		<-held

		// The stream built but not mounted here: the path reaches the mux's "/" handler, which
		// holds its worker as any handler does.
		block := make(chan struct{})
		other := http.NewServeMux()
		other.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
		q2, err := NewQueue(other, QueueConfig{Workers: 1, Queue: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q2.LoadStream(0); err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		go func() {
			defer close(first)
			q2.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, LoadStreamPath, nil))
		}()
		synctest.Wait()
		second := httptest.NewRecorder()
		q2.ServeHTTP(second, httptest.NewRequest(http.MethodPost, LoadStreamPath, nil))
		if s := q2.Stats(); second.Code != http.StatusServiceUnavailable || s.Running != 1 {
			t.Errorf("a second request for %s served by another handler: %d with %d running, want 503 with 1 (it holds its worker)", LoadStreamPath, second.Code, s.Running)
		}
		close(block)
		<-first
	})
}
