package hedgeotel

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hedgekit/hedge/hedgehttp"
)

// ResendCount is the semantic-convention attribute of an HTTP client span that says which
// resend of a request the span is: absent on the first attempt, 1 on the second, and so on.
const ResendCount = attribute.Key("http.request.resend_count")

// AttemptSpans returns a RoundTripper for the inside of a tracing transport (such as
// otelhttp's) placed under a [hedgehttp.Transport]: it marks the span of each hedged or
// retried attempt with http.request.resend_count, the attempt's index, read from the
// [hedgehttp.AttemptHeader] the Transport sets. nil next means [http.DefaultTransport].
//
//	hedgehttp.Config{Next: otelhttp.NewTransport(hedgeotel.AttemptSpans(nil))}
//
// Each attempt is then its own client span, a child of the caller's span, as the
// OpenTelemetry HTTP conventions ask for requests that are sent more than once.
func AttemptSpans(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return attemptSpans{next}
}

type attemptSpans struct{ next http.RoundTripper }

func (a attemptSpans) RoundTrip(r *http.Request) (*http.Response, error) {
	if v := r.Header.Get(hedgehttp.AttemptHeader); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			trace.SpanFromContext(r.Context()).SetAttributes(ResendCount.Int(n))
		}
	}
	return a.next.RoundTrip(r)
}

// CloseIdleConnections passes the call on to next, when next has such a method: the
// connections are next's, and a hedgehttp.Transport's Close (or http.Client's
// CloseIdleConnections) reaches them only through every layer above them.
func (a attemptSpans) CloseIdleConnections() {
	if c, ok := a.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
