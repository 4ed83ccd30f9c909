package hedgeconfig_test

import (
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/hedgehttp"
)

// okTransport answers every request 200 without a network.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: r, Header: http.Header{}}, nil
}

// A change a follower refuses is refused everywhere (Watcher, README "Reloading without a
// restart"): the running file stays for every reader. But the new file is the running one
// for readers while the followers are told (a Transport's Refresh reads it through
// PolicyFor), so a request that reaches a host for the first time in that moment builds the
// host's policy from the file about to be refused. A Transport whose follower comes after
// the refusing one is never told the running file again, and that host kept the refused
// policy until some later change: here a breaker the running file does not have.
func TestRefusedChangeLeavesNoHostOnTheRefusedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  attempts: 2\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var client *http.Client
	// The first follower (a gRPC interceptor, say) cannot run a file with a breaker. While
	// it runs, a request of the service reaches the Transport's host for the first time: made
	// here, the moment is the same every run.
	w.Follow(func(f *hedgeconfig.File) error {
		if f.Defaults.Policy.Breaker == nil {
			return nil
		}
		resp, err := client.Get("http://a.example/x")
		if err != nil {
			t.Errorf("request during the reload: %v", err)
			return errors.New("refused")
		}
		resp.Body.Close()
		return errors.New("refused: this follower runs no breaker")
	})
	tr, err := w.NewTransport(hedgehttp.Config{Next: okTransport{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	client = &http.Client{Transport: tr}

	writeFile(t, path, "defaults:\n  attempts: 2\n  breaker: true\n")
	if err := w.Reload(); err == nil {
		t.Fatal("Reload = nil, want the follower's refusal")
	}
	if w.File().Defaults.Policy.Breaker != nil {
		t.Fatal("the refused file runs for readers")
	}
	p := tr.Policy("http://a.example:80")
	if p == nil {
		t.Fatal("the request made no host")
	}
	if b := p.Measured().Breaker; b != "" {
		t.Errorf("after the refusal the host runs a breaker (%q) from the refused file; the running file has none", b)
	}
}
