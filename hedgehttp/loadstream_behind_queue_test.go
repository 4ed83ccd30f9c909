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
// workers, no request would run again. The queue that built the stream lets the stream's
// requests pass without a worker, as hedgegrpc's queue does its ORCA out-of-band stream.
func TestLoadStreamBehindItsQueueHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
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
		if s := q.Stats(); s.Running != 0 || s.Admitted != 0 {
			t.Errorf("an open load stream: %d handlers running, %d admitted; want none (it holds no worker)", s.Running, s.Admitted)
		}
		if v := rec.header.Get(LoadHeader); v != "" {
			t.Errorf("the stream's response carries a %s header (%q): it ran through a worker", LoadHeader, v)
		}
		call := httptest.NewRecorder()
		q.ServeHTTP(call, httptest.NewRequest(http.MethodGet, "/", nil))
		if call.Code != http.StatusOK {
			t.Errorf("a request beside the open stream: %d %q, want 200", call.Code, call.Body.String())
		}
		cancel()
		<-done

		// A queue without a stream of its own serves that path like any other, through a worker.
		plain, err := NewQueue(mux, QueueConfig{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx2, cancel2 := context.WithCancel(t.Context())
		done2 := make(chan struct{})
		go func() {
			defer close(done2)
			plain.ServeHTTP(&flushRecorder{header: http.Header{}}, httptest.NewRequestWithContext(ctx2, http.MethodGet, LoadStreamPath, nil))
		}()
		synctest.Wait()
		if s := plain.Stats(); s.Running != 1 {
			t.Errorf("a queue that built no stream: %d handlers running for a request to %s, want 1", s.Running, LoadStreamPath)
		}
		cancel2()
		<-done2
	})
}
