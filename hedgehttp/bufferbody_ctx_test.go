package hedgehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A repeatable request's body is read into memory before its first attempt (a PUT without
// GetBody): a body that stalls (a pipe, a slow client's upload a proxy forwards) must not
// hold RoundTrip past its caller's context. A context already done, or one whose deadline
// passes during the read, ends RoundTrip with the context's error, as a plain HTTP/2
// RoundTrip does.
func TestStalledBodyFollowsTheCallersContext(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			srv, base := startServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			tr := newTransport(t, Config{Policy: hedgeNow(), Next: base})
			for name, ctxFor := range map[string]func() (context.Context, context.CancelFunc){
				"cancelled": func() (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					return ctx, cancel
				},
				"deadline": func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.Background(), 100*time.Millisecond)
				},
			} {
				pr, pw := io.Pipe() // a body that sends nothing until closed
				ctx, cancel := ctxFor()
				req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL+"/", pr)
				done := make(chan error, 1)
				go func() {
					resp, err := tr.RoundTrip(req)
					if err == nil {
						resp.Body.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
						t.Errorf("%s: RoundTrip = %v, want the context's error (%v)", name, err, ctx.Err())
					}
				case <-time.After(10 * time.Second): // a bound, not a measurement: the fix returns at once
					t.Errorf("%s: RoundTrip still blocked on the request body 10s on, whatever its context says", name)
					pw.CloseWithError(io.ErrUnexpectedEOF)
					<-done
				}
				pw.Close()
				cancel()
			}
		})
	}
}
