package hedgehttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hedgekit/hedge/hedgehttp"
)

// A request whose client has gone before a worker takes it (a hedge's loser cancelled as it
// reached a server slow to read it) is not served, even by a free worker: its handler would
// work for nobody.
func TestQueueDoesNotServeAGoneRequest(t *testing.T) {
	ran := 0
	q, err := hedgehttp.NewQueue(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }), hedgehttp.QueueConfig{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	if s := q.Stats(); ran != 0 || s.Abandoned != 1 || s.Admitted != 0 {
		t.Errorf("handler run %d times, stats %+v; want no run, the request abandoned", ran, s)
	}
	q.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if ran != 1 {
		t.Errorf("live request: handler run %d times, want 1", ran)
	}
}
