package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestTrustNoteSaysClientsAreCold: "hedgesim -family fleet-large -calls 20000 -seeds 1", the
// README's quick look on a 256-client family, gives each client about 78 calls, too few for
// its policy to warm: recommended's p99 read 174 ms against no hedge's 203 (0.86×) where
// 100000 calls read 26.6 ms (0.14×), and the trust note only said the run was short, as it
// says of every 20000-call run with one client.
func TestTrustNoteSaysClientsAreCold(t *testing.T) {
	note := func(clients, calls int) string {
		var b bytes.Buffer
		r := sim.Report{Model: sim.Model{Workers: 16, Clients: clients, Calls: calls, WarmupFraction: 0.1,
			Seeds: []uint64{1}, LoadsPct: []float64{30}, Setups: []string{"s"}, Cancellations: []string{sim.Ignored}},
			Points: []sim.Point{{Setup: "s", LoadPct: 30, Cancellation: sim.Ignored, Seed: 1, P50Ms: 10, P99Ms: 20, P999Ms: 30, RequestsPerCall: 1}}}
		if err := WriteHeadline(&b, r); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if n := note(256, 20000); !strings.Contains(n, "Each of the 256 clients made about 78 calls") || !strings.Contains(n, "-calls at least 64000") {
		t.Errorf("256 clients, 20000 calls: %s", n)
	}
	for _, c := range [][2]int{{32, 20000}, {1, 20000}, {256, 100000}} {
		if n := note(c[0], c[1]); strings.Contains(n, "clients made about") {
			t.Errorf("%d clients, %d calls: %s", c[0], c[1], n)
		}
	}
}
