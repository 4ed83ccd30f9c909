package hedgehttp

import (
	"net/http"
	"testing"
)

// Host names are case-insensitive (RFC 3986, 3.2.2; a certificate's names too): Host headers
// that spell one name differently share one clone of Next, its connections and one place in
// the bound (MaxKeys), as the hosts' policies do (canonicalName).
func TestReplicaTLSOneClonePerName(t *testing.T) {
	tr, err := NewTransport(Config{Next: &http.Transport{}, MaxKeys: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	first, ok := tr.replicaTLS("example.com", "10.0.0.1:443")
	if !ok {
		t.Fatal("no clone for example.com")
	}
	for _, h := range []string{"Example.com", "EXAMPLE.COM:443", "example.COM"} {
		n, ok := tr.replicaTLS(h, "10.0.0.1:443")
		if !ok || n != first {
			t.Errorf("%s: clone %p (ok %v), want example.com's %p", h, n, ok, first)
		}
	}
	if got := len(tr.named.Snapshot()); got != 1 {
		t.Errorf("%d clones, want 1", got)
	}
	if _, ok := tr.replicaTLS("other.example", "10.0.0.1:443"); !ok {
		t.Error("a second name found the bound full: the spellings of the first took its place")
	}
}
