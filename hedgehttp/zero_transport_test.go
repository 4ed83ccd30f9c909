package hedgehttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgehttp"
)

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// A zero Transport (&hedgehttp.Transport{}, written by analogy with http.Transport, whose zero
// value works) panicked in its first attempt's goroutine with a nil pointer dereference, which
// reached the caller as a *hedge.PanicError saying nothing of the cause. A RoundTripper answers
// misuse with an error: one wrapping ErrConfig, as RoundTrip already returns for a key's
// invalid configuration, and the request body closed, as the RoundTripper contract asks.
func TestZeroTransportReturnsAConfigError(t *testing.T) {
	var tr hedgehttp.Transport
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:1/", body)
	if err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		resp, err = tr.RoundTrip(req)
	}()
	if panicked != nil {
		t.Fatalf("RoundTrip on a zero Transport panicked: %v", panicked)
	}
	if resp != nil || !errors.Is(err, hedgehttp.ErrConfig) {
		t.Errorf("RoundTrip on a zero Transport = %v, %v; want an error wrapping ErrConfig", resp, err)
	}
	if body.closed == 0 {
		t.Error("the request body was not closed")
	}
}

// A zero Queue panicked with a nil pointer dereference on its first request; net/http logs a
// handler's panic, so its message is all an operator sees. It names NewQueue.
func TestZeroQueuePanicsWithAMessage(t *testing.T) {
	var q hedgehttp.Queue
	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	if !strings.HasPrefix(msg, "hedgehttp: ") || !strings.Contains(msg, "NewQueue") {
		t.Errorf("ServeHTTP on a zero Queue: panic %q, want a hedgehttp: message naming NewQueue", msg)
	}
}
