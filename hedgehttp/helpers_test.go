package hedgehttp

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// protos lists the wire protocols every network test runs under.
var protos = []string{"HTTP/1.1", "HTTP/2"}

// startServer starts an httptest server on 127.0.0.1 speaking proto and
// returns it with a plain client transport for it. Both are closed at the end
// of the test.
func startServer(t testing.TB, proto string, h http.Handler) (*httptest.Server, *http.Transport) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	// Cancelled attempts abort TLS handshakes: expected here, and noise in the test log.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	var tr *http.Transport
	switch proto {
	case "HTTP/1.1":
		s.Start()
		tr = &http.Transport{MaxIdleConnsPerHost: 64}
	case "HTTP/2":
		s.EnableHTTP2 = true
		s.StartTLS()
		base := s.Client().Transport.(*http.Transport)
		tr = &http.Transport{
			TLSClientConfig:     base.TLSClientConfig.Clone(),
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 64,
		}
	default:
		t.Fatalf("unknown proto %q", proto)
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		s.Close()
	})
	return s, tr
}

// checkProto fails the test when resp did not travel over proto.
func checkProto(t testing.TB, proto string, resp *http.Response) {
	t.Helper()
	if got := resp.Proto; got != proto && !(proto == "HTTP/2" && resp.ProtoMajor == 2) {
		t.Fatalf("response came over %s, want %s", got, proto)
	}
}

// waitFor polls cond with short pauses, at most for d, and reports whether it
// became true. It bounds every wait for something that crosses the network.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return true
}

// checkGoroutines records the goroutine count and, at cleanup (after the
// servers and transports registered later have closed), waits for it to come
// back down, failing with a dump of the goroutines left over.
func checkGoroutines(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		if waitFor(5*time.Second, func() bool {
			n = runtime.NumGoroutine()
			return n <= before
		}) {
			return
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines: %d before, %d after; leaked:\n%s", before, n, filterStacks(string(buf)))
	})
}

// filterStacks drops the testing framework's own goroutines from a dump.
func filterStacks(dump string) string {
	var keep []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*T).Run") ||
			strings.Contains(g, "testing.runTests") || strings.Contains(g, "runtime.Stack") {
			continue
		}
		keep = append(keep, g)
	}
	return strings.Join(keep, "\n\n")
}
