package hedgeotel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

// With otelhttp under the hedging transport, each attempt is its own client span under the
// caller's span, and the hedge's carries http.request.resend_count.
func TestAttemptSpansWithOtelhttp(t *testing.T) {
	checkGoroutines(t)
	hedged := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(hedgehttp.AttemptHeader) == "" {
			select { // the primary is stuck until the hedge has arrived and it is cancelled
			case <-hedged:
				<-r.Context().Done()
			case <-r.Context().Done():
			}
			return
		}
		close(hedged)
		io.WriteString(w, "from the hedge")
	}))
	defer srv.Close()

	spans := tracetest.NewSpanRecorder()
	ended := make(chan struct{}, 8)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSpanProcessor(endSignal(ended)))
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.After(time.Millisecond), Budget: budget.Config{Off: true}},
		Next:   otelhttp.NewTransport(hedgeotel.AttemptSpans(nil), otelhttp.WithTracerProvider(tp)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()

	ctx, parent := tp.Tracer("test").Start(context.Background(), "GET users")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := (&http.Client{Transport: tr}).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parent.End()
	if string(body) != "from the hedge" {
		t.Fatalf("body %q", body)
	}

	// The loser's span ends when its RoundTrip returns, after the winner's answer.
	for range 3 { // two attempts and the caller's span
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("spans did not end")
		}
	}
	var clients []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			clients = append(clients, s)
		}
	}
	if len(clients) != 2 {
		t.Fatalf("%d client spans, want one per attempt (2)", len(clients))
	}
	resends := map[int64]int{}
	for _, s := range clients {
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %q is not a child of the caller's span", s.Name())
		}
		n := int64(0)
		for _, kv := range s.Attributes() {
			if kv.Key == hedgeotel.ResendCount {
				n = kv.Value.AsInt64()
			}
		}
		resends[n]++
	}
	if resends[0] != 1 || resends[1] != 1 {
		t.Errorf("resend counts %v, want one first attempt (none) and one with 1", resends)
	}
}

// endSignal is a span processor that sends on ch each time a span ends.
type endSignal chan struct{}

func (e endSignal) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endSignal) OnEnd(sdktrace.ReadOnlySpan)                     { e <- struct{}{} }
func (e endSignal) Shutdown(context.Context) error                  { return nil }
func (e endSignal) ForceFlush(context.Context) error                { return nil }
