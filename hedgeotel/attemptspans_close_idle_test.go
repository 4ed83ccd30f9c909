package hedgeotel_test

import (
	"net/http"
	"testing"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

// idleCloser is a RoundTripper that only records CloseIdleConnections, as an
// *http.Transport's keep-alive connections would be closed by it.
type idleCloser struct{ closed int }

func (c *idleCloser) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, http.ErrNotSupported
}
func (c *idleCloser) CloseIdleConnections() { c.closed++ }

// AttemptSpans sits in the chain of RoundTrippers under a hedgehttp.Transport, whose Close
// and CloseIdleConnections (and http.Client.CloseIdleConnections) reach the transport that
// holds the connections only through a CloseIdleConnections method on every layer. Without
// one, a Transport's Close leaves the keep-alive connections (and their goroutines) open.
func TestAttemptSpansPassesCloseIdleConnectionsOn(t *testing.T) {
	inner := &idleCloser{}
	rt := hedgeotel.AttemptSpans(inner)
	(&http.Client{Transport: rt}).CloseIdleConnections()
	if inner.closed != 1 {
		t.Fatalf("http.Client.CloseIdleConnections reached next %d times, want 1", inner.closed)
	}

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{Policy: hedge.Config{}, Next: rt})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if inner.closed != 2 {
		t.Fatalf("after the hedging Transport's Close, next's CloseIdleConnections ran %d times in all, want 2", inner.closed)
	}
}
