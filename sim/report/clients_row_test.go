package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

// TestModelRowsSayClientBoundAndShare: the header of a run of sequential clients, or of one
// heavy client among light ones, read exactly as one of 32 even, unbounded clients
// ("hedgesim -clients 32 -client-inflight 1" and "-clients 32" made the same model table), and
// a family's own description stood unmarked above rows that -clients had changed
// ("-family fleet -clients 8": "32 clients" and "8 independent clients").
func TestModelRowsSayClientBoundAndShare(t *testing.T) {
	header := func(m sim.Model) string {
		m.Calls, m.Seeds, m.LoadsPct, m.Setups, m.Cancellations = 1000, []uint64{1}, []float64{50}, []string{"s"}, []string{sim.Ignored}
		var b bytes.Buffer
		if err := WriteMarkdown(&b, sim.Report{Model: m, Points: []sim.Point{{Setup: "s", LoadPct: 50, Cancellation: sim.Ignored, Seed: 1,
			P50Ms: 10, P99Ms: 20, P999Ms: 30, RequestsPerCall: 1}}}); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		return md[:strings.Index(md, "\n## ")]
	}
	for _, c := range []struct {
		m        sim.Model
		want     []string
		unwanted []string
	}{
		{sim.Model{Workers: 16, Clients: 32, ClientInFlight: 1}, []string{"32 independent clients", "each sequential (1 call in flight at most)"}, nil},
		{sim.Model{Workers: 16, Clients: 16, ClientInFlight: 2}, []string{"each with 2 calls in flight at most"}, nil},
		{sim.Model{Workers: 16, Clients: 1, ClientInFlight: 4}, []string{"1 client; each with 4 calls in flight at most"}, nil},
		{sim.Model{Workers: 16, Clients: 32}, []string{"32 independent clients"}, []string{"in flight"}},
		{sim.Model{Workers: 16, Family: sim.FamilyUnevenClients, Clients: 32, HeavyClientShare: 0.5},
			[]string{"the first makes 50 % of the calls"}, []string{"this run's flags change it"}},
		{sim.Model{Workers: 16, Family: sim.FamilyFleetSequential, Clients: 32, ClientInFlight: 1}, nil, []string{"this run's flags change it"}},
		{sim.Model{Workers: 16, Family: sim.FamilyFleet, Clients: 8}, []string{"fleet: 32 clients", "this run's flags change it", "8 independent clients"}, nil},
		{sim.Model{Workers: 16, Family: sim.FamilyFleetSequential, Clients: 32, ClientInFlight: 2}, []string{"this run's flags change it"}, nil},
		{sim.Model{Workers: 2, Family: sim.FamilySmallReplicas, Clients: 8}, []string{"this run's flags change it"}, nil}, // -replicas 1
	} {
		h := header(c.m)
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("%+v: header lacks %q:\n%s", c.m, w, h)
			}
		}
		for _, u := range c.unwanted {
			if strings.Contains(h, u) {
				t.Errorf("%+v: header has %q:\n%s", c.m, u, h)
			}
		}
	}
}
