package hedgehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/workqueue"
)

// registrations is a context that never ends and counts the functions registered with it
// through AfterFunc (which context.WithCancel and context.AfterFunc use for a parent of a
// type they do not know) and not yet stopped: what stays attached to a caller's context.
type registrations struct {
	done chan struct{}
	live atomic.Int32
}

func newRegistrations() *registrations { return &registrations{done: make(chan struct{})} }

func (r *registrations) Deadline() (time.Time, bool) { return time.Time{}, false }
func (r *registrations) Done() <-chan struct{}       { return r.done }
func (r *registrations) Err() error                  { return nil }
func (r *registrations) Value(any) any               { return nil }

func (r *registrations) AfterFunc(f func()) func() bool {
	r.live.Add(1)
	var stopped atomic.Bool
	return func() bool {
		if stopped.CompareAndSwap(false, true) {
			r.live.Add(-1)
			return true
		}
		return false
	}
}

func TestWinnerBodyReadToEOFReleasesTheCallersContext(t *testing.T) {
	// With the first attempt on a goroutine of its own, and on the caller's; twice each, as
	// the second call to a host sends its first attempt on the attempt's own context when it
	// runs on the caller's goroutine.
	for _, honours := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var attemptCtx context.Context
			next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
				attemptCtx = r.Context()
				return textResponse(r, 200, "primary"), nil
			}}
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, NextHonoursContext: honours})
			for i := range 2 {
				parent := newRegistrations()
				req, _ := http.NewRequestWithContext(parent, "GET", "http://svc.test/", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "primary" {
					t.Fatalf("body %q, %v", b, err)
				}
				synctest.Wait()
				// The body is read to its end and not closed: as with http.Transport, nothing of
				// the request may stay attached to the caller's context.
				if n := parent.live.Load(); n != 0 {
					t.Errorf("inline %v, call %d: %d registrations left on the caller's context after reading the body to EOF, want 0", honours, i, n)
				}
				if attemptCtx.Err() == nil {
					t.Errorf("inline %v, call %d: the winning attempt's request context is still alive after its body was read to EOF", honours, i)
				}
				resp.Body.Close()
			}
		})
	}
}

// cancelAtStart is a context whose Done channel is closed but whose first Err() is nil: a
// caller that gives up in the instant the call starts.
type cancelAtStart struct {
	context.Context
	done  chan struct{}
	calls atomic.Int32
}

func (c *cancelAtStart) Done() <-chan struct{} { return c.done }
func (c *cancelAtStart) Err() error {
	if c.calls.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

type atomicCloser struct {
	io.Reader
	closes atomic.Int32
}

func (c *atomicCloser) Close() error { c.closes.Add(1); return nil }

func TestPOSTBodyClosedOnceWhenTheCallerCancelsAsTheCallStarts(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			tr := newTransport(t, Config{Policy: hedge.Config{}, Next: &fakeNext{}})
			ctx := &cancelAtStart{Context: context.Background(), done: make(chan struct{})}
			close(ctx.done)
			body := &atomicCloser{Reader: strings.NewReader("payload")}
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://svc.test/", body)
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close() // the attempt was quicker than the cancellation
			}
			synctest.Wait() // the attempt, if it started late, has finished
			if n := body.closes.Load(); n != 1 {
				t.Fatalf("the caller's body was closed %d times, want once", n)
			}
		})
	}
}

func TestFast404FromAHedgeDoesNotBeatASlow200(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			release := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(AttemptHeader) != "" {
					http.Error(w, "stale replica", http.StatusNotFound)
					return
				}
				select {
				case <-release:
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Second):
				}
				if r.URL.Path == "/down" {
					http.Error(w, "down", http.StatusServiceUnavailable)
					return
				}
				io.WriteString(w, "slow 200")
			})
			srv, base := startServer(t, proto, h)
			failed := make(chan struct{}, 1)
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base, Observer: func(_ string, e hedge.Event) {
				if e.Kind == hedge.AttemptFinished && e.Attempt == 1 && e.Err != nil {
					failed <- struct{}{}
				}
			}})
			for _, c := range []struct {
				path string
				code int
				body string
			}{
				{"/", 200, "slow 200"},            // a success from any attempt wins
				{"/down", 404, "stale replica\n"}, // all failed: the final answer over the 503
			} {
				done := make(chan *http.Response, 1)
				go func() {
					resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL+c.path, nil))
					if err != nil {
						t.Error(err)
					}
					done <- resp
				}()
				select {
				case <-failed: // the 404 came back first, and must not end the call
				case <-time.After(10 * time.Second):
					t.Fatal("the hedge never answered")
				}
				release <- struct{}{}
				resp := <-done
				if resp == nil {
					return
				}
				if got := readAll(t, resp); resp.StatusCode != c.code || got != c.body {
					t.Errorf("%s: %d %q, want %d %q", c.path, resp.StatusCode, got, c.code, c.body)
				}
			}
		})
	}
}

func TestNextReturningNilResponseAndNilErrorIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{respond: func(*http.Request, string) (*http.Response, error) { return nil, nil }}
		tr := newTransport(t, Config{Policy: hedge.Config{Budget: budget.Config{Off: true}}, Next: next})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		resp, err := tr.RoundTrip(req)
		var pe *hedge.PanicError
		if resp != nil || err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "nil *Response") {
			t.Fatalf("RoundTrip = %v, %v; want an error saying Next returned nothing", resp, err)
		}
	})
}

func TestDeclaredContentLengthIsNotAllocatedUpFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: &fakeNext{}, MaxBodyBuffer: 256 << 20})
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", "http://svc.test/", io.NopCloser(strings.NewReader("tiny")))
		req.ContentLength = 200 << 20 // a lie: the body is 4 bytes
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, err := tr.RoundTrip(req)
		runtime.ReadMemStats(&after)
		if err == nil {
			resp.Body.Close()
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("RoundTrip allocated %d MiB for a 4-byte body", grew>>20)
		}
	})
}

func TestPanickingObserverReachesTheCallerAndClosesTheWinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed atomic.Int32
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			resp := textResponse(r, 200, "ok")
			resp.Body = &countClose{ReadCloser: resp.Body, n: &closed}
			return resp, nil
		}}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, Observer: func(_ string, e hedge.Event) {
			if e.Kind == hedge.CallFinished {
				panic("observer")
			}
		}})
		func() {
			defer func() {
				if pe, ok := recover().(*hedge.PanicError); !ok || pe.Value != "observer" {
					t.Errorf("RoundTrip panicked with %v; want the observer's panic as a *hedge.PanicError", pe)
				}
			}()
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
			tr.RoundTrip(req)
			t.Error("RoundTrip returned")
		}()
		synctest.Wait()
		if closed.Load() != 1 {
			t.Errorf("the winning response was closed %d times, want once", closed.Load())
		}
	})
}

type countClose struct {
	io.ReadCloser
	n *atomic.Int32
}

func (c *countClose) Close() error { c.n.Add(1); return c.ReadCloser.Close() }

func TestQueueObserverPanicDoesNotLeakWorkerSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panicking atomic.Bool
		panicking.Store(true)
		var mu sync.Mutex
		q := mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), QueueConfig{
			Workers: 2, Queue: -1,
			Observer: func(e QueueEvent) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == workqueue.Admitted && panicking.Load() {
					panic("observer")
				}
			}})
		for range 5 { // more than the workers
			func() {
				defer func() { recover() }()
				q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			}()
		}
		panicking.Store(false)
		rec := httptest.NewRecorder()
		q.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != http.StatusOK {
			t.Errorf("after observer panics the queue answers %d, want 200 (worker slots leaked)", rec.Code)
		}
	})
}
