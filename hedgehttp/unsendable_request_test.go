package hedgehttp_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// A request net/http cannot send (no host, a scheme it does not speak) fails at once with
// net/http's own error. Before, it was retried as if the dependency had failed: each retry
// waited out its backoff (the caller waited 150 ms here), spent the budget and counted for
// the breaker, to hand back the same error.
func TestUnsendableRequestIsNotRetried(t *testing.T) {
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{Policy: hedge.Config{Attempts: 3,
		Backoff: hedge.Backoff{Initial: 50 * time.Millisecond, Jitter: hedge.Off}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for u, want := range map[string]string{
		"http:///path":            "no Host in request URL",
		"ftp://example.invalid/x": "unsupported protocol scheme",
	} {
		req, _ := http.NewRequest("GET", u, nil)
		if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want net/http's %q", u, err, want)
		}
	}
	for key, m := range tr.Measured() {
		if m.Retries != 0 || m.Calls != 0 {
			t.Errorf("%s: %d calls, %d retries; want the requests sent once, outside any policy", key, m.Calls, m.Retries)
		}
	}
}

// A scheme registered with net/http's Transport is still served through it, once.
func TestRegisteredSchemeGoesThrough(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	next := &http.Transport{}
	next.RegisterProtocol("file", http.NewFileTransport(http.Dir(dir)))
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{Next: next})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	req, _ := http.NewRequest("GET", "file:///f", nil)
	req.Header.Set(hedgehttp.AttemptHeader, "2") // not this call's: must not go further
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "contents" {
		t.Errorf("body %q, want the file's contents", b)
	}
}
