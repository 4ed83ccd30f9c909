package hedgehttp

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestTransportReadsEveryLoadHeaderLine: a Hedge-Load field that arrives on several lines
// (an intermediary may split a list-valued field, RFC 9110 section 5.3) is one RFC 8941
// dictionary, read as the lines joined with commas, a later key replacing an earlier one
// (RFC 8941 sections 3.2 and 4.2). Reading the first line alone would miss the queue the
// second one reports, and the policy would take a backlogged server for an idle one.
func TestTransportReadsEveryLoadHeaderLine(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()[LoadHeader] = []string{"busy=16, workers=16", "queued=12"}
			})
			srv, base := startServer(t, proto, h)
			tr, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: base})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := len(resp.Header[LoadHeader]); n != 2 {
				t.Fatalf("the response carried %d %s lines, want the 2 the server sent", n, LoadHeader)
			}
			u, _ := url.Parse(srv.URL)
			p := tr.Policy(u.Scheme + "://" + u.Host)
			if p == nil {
				t.Fatal("no policy for the server's host")
			}
			if q, w, ok := p.ServerQueue(time.Now()); !ok || q != 12 || w != 16 {
				t.Fatalf("ServerQueue = %d, %d, %v; want 12 queued of 16 workers, from both lines", q, w, ok)
			}
		})
	}
}
