package hedgehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgetest"
)

// TestDriversAgree plays the agreement scenarios (hedgetest.Scenarios) through a Transport
// and a real http.Server, over in-memory connections (net.Pipe) so that the whole call runs
// in a synctest bubble, on fake time: the Transport must make the same decisions at the same
// moments as hedge.Do, the other integrations and the simulator. Then it checks what code
// under the Transport (Next) sees of its attempt, and that panics and runtime.Goexit there
// reach the caller as they do in hedge.Do.
func TestDriversAgree(t *testing.T) {
	hedgetest.TestDriver(t, pipeDriver)
}

// pipeDriver is a hedgetest.Driver: a Transport over an http.Transport whose connections are
// pipes to a server that plays each call's answers, finding the attempt's index in its
// AttemptHeader.
func pipeDriver(t *testing.T, cfg hedge.Config, hook func(context.Context)) hedgetest.CallFunc {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	var mu sync.Mutex
	var answers []hedgetest.Answer[string]
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := strconv.Atoi(r.Header.Get(AttemptHeader)) // none: the first attempt
		mu.Lock()
		a := hedgetest.Answer[string]{Stuck: true}
		if k < len(answers) {
			a = answers[k]
		}
		mu.Unlock()
		playHTTP(w, r, a)
	})}
	go srv.Serve(l)
	var next http.RoundTripper = &http.Transport{DialContext: l.dial}
	honours := false
	if hook != nil {
		next, honours = hookTransport{next, hook}, true
	}
	tr, err := NewTransport(Config{Policy: cfg, Next: next, NextHonoursContext: honours})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	return func(ctx context.Context, as []hedgetest.Answer[string]) (string, error) {
		mu.Lock()
		answers = as
		mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://pipe/", nil)
		if err != nil {
			return "", err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", resp.Status, b)
		}
		return string(b), nil
	}
}

// playHTTP answers one attempt as a plays it (see hedgetest.Answer): a final failure as a
// 404, a retriable one as a 503, the start signal as a StartedStatus response when the
// attempt asked for one.
func playHTTP(w http.ResponseWriter, r *http.Request, a hedgetest.Answer[string]) {
	ctx := r.Context()
	waited := time.Duration(0)
	if a.Starts && (a.Stuck || a.StartAfter <= a.After) {
		if !hedgetest.Sleep(ctx, a.StartAfter) {
			return
		}
		waited = a.StartAfter
		if r.Header.Get(StartSignalHeader) != "" {
			w.WriteHeader(StartedStatus)
		}
	}
	if a.Stuck {
		<-ctx.Done()
		return
	}
	if !hedgetest.Sleep(ctx, a.After-waited) {
		return
	}
	switch {
	case a.Err == nil:
		io.WriteString(w, a.Value)
	case hedge.Classify(a.Err).Class == hedge.Permanent:
		http.Error(w, a.Err.Error(), http.StatusNotFound)
	default:
		http.Error(w, a.Err.Error(), http.StatusServiceUnavailable)
	}
}

// hookTransport runs hook with each attempt's request context before sending it on.
type hookTransport struct {
	next http.RoundTripper
	hook func(context.Context)
}

func (h hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.hook(r.Context())
	return h.next.RoundTrip(r)
}

// pipeListener is a net.Listener whose connections are the server ends of net.Pipe pairs
// made by dial: connections that block on channels, which a synctest bubble can wait on.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, errors.New("pipe listener closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
