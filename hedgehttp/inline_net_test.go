package hedgehttp

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// goid is the id of the calling goroutine, read from runtime.Stack.
func goid() string {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	return s[:strings.IndexByte(s, ' ')]
}

// whereNext is a Next that records, per attempt header value ("" for the first attempt),
// the goroutine that sent it, then passes the request on.
type whereNext struct {
	next  http.RoundTripper
	mu    sync.Mutex
	where map[string]string
}

func (w *whereNext) RoundTrip(r *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.where[r.Header.Get(AttemptHeader)] = goid()
	w.mu.Unlock()
	return w.next.RoundTrip(r)
}

func TestFirstAttemptRunsOnTheCallersGoroutineWhenNextHonoursContext(t *testing.T) {
	for _, honours := range []bool{false, true} {
		checkGoroutines(t)
		s := newBlockPrimary()
		srv, base := startServer(t, "HTTP/1.1", s)
		next := &whereNext{next: base, where: map[string]string{}}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, NextHonoursContext: honours})
		caller := goid()
		resp, err := tr.RoundTrip(mustRequest(t, "GET", srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "hedge 1" {
			t.Errorf("honours %v: body = %q, want the hedge's answer", honours, got)
		}
		next.mu.Lock()
		first, hedged := next.where[""], next.where["1"]
		next.mu.Unlock()
		if (first == caller) != honours {
			t.Errorf("honours %v: first attempt on goroutine %s, caller's is %s", honours, first, caller)
		}
		if hedged == "" || hedged == caller {
			t.Errorf("honours %v: hedge on goroutine %q, want one of its own", honours, hedged)
		}
		if !waitFor(5*time.Second, func() bool { return s.cancelled.Load() == 1 }) {
			t.Errorf("honours %v: the losing primary was not cancelled on the server", honours)
		}
	}
}

func TestCallerCancellationEndsTheInlineFirstAttempt(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			s := newBlockPrimary()
			srv, base := startServer(t, proto, s)
			// No trigger: nothing but the caller's goroutine and the transport's own.
			tr := newTransport(t, Config{Next: base})
			// Twice: the first call learns the host's protocol, the second sends its
			// attempt on the attempt's own context, which the caller's reaches through the core.
			const calls = 2
			for i := range calls {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				id := strconv.Itoa(i)
				go func() {
					<-s.arrival(id)
					cancel()
				}()
				req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?call="+id, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := tr.RoundTrip(req)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("call %d: RoundTrip = %v, %v; want context.Canceled", i, resp, err)
				}
				if !waitFor(5*time.Second, func() bool { return s.cancelled.Load() == int32(i+1) }) {
					t.Errorf("call %d: the primary was not cancelled on the server", i)
				}
			}
			if m := tr.Measured()[canonicalURL(t, srv.URL)]; m.InFlight != 0 || m.Calls != calls {
				t.Errorf("Measured = %+v, want %d calls and nothing in flight", m, calls)
			}
		})
	}
}

// stuckNext ignores its request's context: it answers only when released.
type stuckNext struct{ release chan struct{} }

func (s stuckNext) RoundTrip(*http.Request) (*http.Response, error) {
	<-s.release
	return nil, errors.New("released")
}

func TestNextThatIgnoresItsContextDoesNotHoldTheCaller(t *testing.T) {
	checkGoroutines(t)
	next := stuckNext{release: make(chan struct{})}
	defer close(next.release)
	tr := newTransport(t, Config{Policy: hedge.Config{}, Next: next})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RoundTrip error = %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RoundTrip waited for a Next that ignores its context")
	}
}
