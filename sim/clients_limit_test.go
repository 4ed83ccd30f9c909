package sim

import (
	"runtime"
	"strings"
	"testing"
)

// Each client holds a policy of its own: a run of more clients than calls, most of them
// making none, is refused, and so is one past MaxClients.
func TestClientsBoundedByCallsAndMaxClients(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Clients: 4096, Calls: 2000}, "sim: Clients must be at most Calls (each call goes to a client drawn at random, and with more clients than calls many make none), got 4096 clients for 2000 calls"},
		{Params{Clients: MaxClients + 1, Calls: 1 << 20}, "sim: Clients must be in [1, 16384]"},
	} {
		if _, err := c.p.resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.p, err, c.want)
		}
	}
	for _, p := range []Params{{Clients: 2000, Calls: 2000}, {Clients: MaxClients, Calls: MaxClients}} {
		if _, err := p.resolve(); err != nil {
			t.Errorf("Clients %d, Calls %d: %v", p.Clients, p.Calls, err)
		}
	}
}

// A default parallelism runs fewer points at once when each has thousands of clients, so
// that the policies in memory together stay bounded on a machine of many cores; one asked
// for is kept.
func TestParallelismBoundsClientsAtOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	for _, c := range []struct{ asked, clients, want int }{
		{0, 1, 64},
		{0, 256, 64},
		{0, 1024, clientsAtOnce / 1024},
		{0, MaxClients, clientsAtOnce / MaxClients},
		{0, clientsAtOnce * 2, 1},
		{3, MaxClients, 3},
	} {
		if got := parallelism(c.asked, c.clients); got != c.want {
			t.Errorf("parallelism(%d, %d clients) = %d, want %d", c.asked, c.clients, got, c.want)
		}
	}
}
