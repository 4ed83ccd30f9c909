//go:build !race

package hedgehttp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// realLoadCalls sizes TestRealLoad: `go test -run TestRealLoad -realload-calls 128000
// ./hedgehttp/` is the size the figures in BENCHMARKS.md were measured at.
var realLoadCalls = flag.Int("realload-calls", 24000, "calls per configuration and protocol in TestRealLoad")

const (
	realLoadCallers  = 64
	realLoadStall    = 100 * time.Millisecond
	realLoadStallOne = 50                     // one request in 50 (2 %) stalls
	realLoadDeadline = 2 * time.Second        // a call slower than this is lost, not waited for
	realLoadBudget   = 120 * time.Second      // the whole run stops here, measured or not
	realLoadLost     = time.Duration(1 << 62) // the latency a lost call counts as
	realLoadRounds   = 8                      // turns each configuration takes
	realLoadStarved  = 10 * time.Millisecond  // a no-hedge p50 above this: the machine is starved
)

// stragglerServer answers every request at once except one in realLoadStallOne, picked by
// a hash of the request's arrival number (so a hedge is a fresh draw), which stalls for
// realLoadStall or until it is cancelled: stragglers, and no queue anywhere.
func stragglerServer(n *atomic.Uint64) http.Handler {
	return stallingServer(n, realLoadStallOne, realLoadStall)
}

// stallingServer answers at once except one request in every (by a hash of its arrival
// number), which stalls for stall or until it is cancelled.
func stallingServer(n *atomic.Uint64, every uint64, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mix(n.Add(1))%every == 0 {
			t := time.NewTimer(stall)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		io.WriteString(w, "ok")
	})
}

// mix is splitmix64's finaliser: consecutive numbers spread over the whole range.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// loadResult is what one closed-loop run measured: every call's latency (a lost call as
// realLoadLost), sorted.
type loadResult struct {
	lat     []time.Duration
	lost    int
	elapsed time.Duration
}

func (r loadResult) quantile(q float64) time.Duration {
	return r.lat[min(int(q*float64(len(r.lat))), len(r.lat)-1)]
}

func (r loadResult) String() string {
	f := func(d time.Duration) string {
		if d == realLoadLost {
			return "lost"
		}
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%d calls in %v: p50 %s, p99 %s, p99.9 %s, %d lost", len(r.lat), r.elapsed.Round(time.Millisecond),
		f(r.quantile(0.5)), f(r.quantile(0.99)), f(r.quantile(0.999)), r.lost)
}

// closedLoop runs calls GETs of url through rt from realLoadCallers goroutines, each sending
// its next call when its last one ends, as fast as they can, and appends their latencies to
// r.
func closedLoop(t *testing.T, rt http.RoundTripper, url string, calls int, r *loadResult) {
	t.Helper()
	client := &http.Client{Transport: rt}
	lat := make([]time.Duration, calls)
	var next atomic.Int64
	stop := time.Now().Add(realLoadBudget)
	begin := time.Now()
	var wg sync.WaitGroup
	for range realLoadCallers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) || time.Now().After(stop) {
					return
				}
				lat[i] = realLoadCall(client, url)
			}
		})
	}
	wg.Wait()
	if n := min(int(next.Load()), calls); n < calls {
		t.Fatalf("only %d of %d calls ran within %v", n, calls, realLoadBudget)
	}
	for _, d := range lat {
		if d == realLoadLost {
			r.lost++
		}
	}
	r.lat = append(r.lat, lat...)
	r.elapsed += time.Since(begin)
}

// watchStalls starts a goroutine that sleeps a millisecond at a time and measures how late it
// wakes; the function it returns stops it and reports the latest wake-up. A process the
// machine stops for a long while (other work on a shared machine, a VM's host) wakes late
// by that much.
func watchStalls() func() time.Duration {
	done := make(chan struct{})
	worst := make(chan time.Duration)
	go func() {
		var w time.Duration
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				worst <- w
				return
			case now := <-t.C:
				w = max(w, now.Sub(last)-time.Millisecond)
				last = now
			}
		}
	}()
	return func() time.Duration {
		close(done)
		return <-worst
	}
}

func realLoadCall(client *http.Client, url string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), realLoadDeadline)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return realLoadLost
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return realLoadLost
	}
	return time.Since(start)
}

// TestRealLoad is issue 24's load test on the real clock: 64 callers in a closed loop over
// loopback, as fast as they go (so the client is busy: client and server share the
// machine's cores), against a server that answers at once except 2 % of requests that stall
// 100 ms. There is no queue anywhere, so the recommended default must pay: its backlog
// evidence must not mistake the busy client's own latency drift for a backlog. Every call is
// bounded (2 s) and the run too (120 s); a lost call counts as slower than any answer.
//
// The two configurations take turns, so both see the same machine. The test asserts p99 ≤
// 0.5× no hedge (and, on runs of 100,000 calls or more, p99.9 ≤ 0.75×), a margin that holds on
// a shared 2-core machine where other processes take CPU at any moment; BENCHMARKS.md has
// the figures at the size (-realload-calls 128000). It skips when no hedge's p50
// shows the machine starved (above 10ms for calls that take a fraction of one), or when the
// machine stopped the process for more than a quarter of a straggler's stall and the payoff fell
// short (then the tail measures the machine, not the policy).
func TestRealLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-clock load test: seconds of loopback traffic")
	}
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			var n atomic.Uint64
			srv, tr := startServer(t, proto, stragglerServer(&n))
			tr.MaxIdleConnsPerHost = 2 * realLoadCallers
			ht, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: tr})
			if err != nil {
				t.Fatal(err)
			}
			// The two configurations take turns, a slice of the calls at a time, so that both
			// see the same machine: other processes take its CPU at any moment.
			var plain, hedged loadResult
			slice := (*realLoadCalls + realLoadRounds - 1) / realLoadRounds
			stall := watchStalls()
			for range realLoadRounds {
				closedLoop(t, tr, srv.URL, slice, &plain)
				closedLoop(t, ht, srv.URL, slice, &hedged)
			}
			worst := stall()
			slices.Sort(plain.lat)
			slices.Sort(hedged.lat)
			if p50 := plain.quantile(0.5); p50 > realLoadStarved {
				t.Skipf("no hedge's p50 is %v: the machine is too busy for this client to measure anything but itself", p50)
			}
			m := ht.Measured()[srv.URL]
			t.Logf("no hedge:    %v", plain)
			t.Logf("recommended: %v; %d hedges (%.2f%%), %d won, suppressed %v", hedged,
				m.HedgesStarted, 100*float64(m.HedgesStarted)/float64(m.Calls), m.HedgesWon, m.Suppressed)
			t.Logf("ratios: p99 %.2f, p99.9 %.2f; the process's longest stall %v", float64(hedged.quantile(0.99))/float64(plain.quantile(0.99)),
				float64(hedged.quantile(0.999))/float64(plain.quantile(0.999)), worst.Round(time.Millisecond))
			var fails []string
			if plain.lost+hedged.lost > 0 {
				fails = append(fails, fmt.Sprintf("calls lost: %d without hedging, %d with", plain.lost, hedged.lost))
			}
			if p, h := plain.quantile(0.99), hedged.quantile(0.99); p < realLoadStall {
				t.Errorf("no hedge p99 %v: the stragglers did not show", p)
			} else if float64(h) > 0.5*float64(p) {
				fails = append(fails, fmt.Sprintf("recommended p99 %v, more than 0.5 × no hedge's %v", h, p))
			}
			// The p99.9 of a short run rests on a few dozen calls, which one stall of the
			// machine moves; it is judged on runs of the size.
			if p, h := plain.quantile(0.999), hedged.quantile(0.999); len(plain.lat) >= 100000 && float64(h) > 0.75*float64(p) {
				fails = append(fails, fmt.Sprintf("recommended p99.9 %v, more than 0.75 × no hedge's %v", h, p))
			}
			if len(fails) > 0 && worst > realLoadStall/4 && (hedged.lost == 0 || worst > realLoadDeadline/2) {
				// Calls in flight then all end together, hedged or not, and the slowest ones
				// measure the machine: whichever configuration ran through the stall loses.
				t.Skipf("%s; but the machine stopped this process for %v (a timer due every millisecond fired that late): the tail measures the machine",
					strings.Join(fails, "; "), worst)
			}
			for _, f := range fails {
				t.Error(f)
			}
		})
	}
}

// TestSequentialClientHedges: a client with one call in flight at a time (a CLI, a batch job)
// gets no overtaking evidence, since nothing runs beside its call; once it knows its median
// (64 answers) and the median sits at its lowest, a call past the threshold is a straggler
// and is hedged. 1,000 sequential GETs, 3 % of responses stalled 300 ms (one in 33), over
// loopback: without hedging about 30 calls take 300 ms, so the p99 would be 300 ms.
func TestSequentialClientHedges(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-clock test: a few seconds of loopback traffic")
	}
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			var n atomic.Uint64
			srv, tr := startServer(t, proto, stallingServer(&n, 33, 300*time.Millisecond))
			ht, err := NewTransport(Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Next: tr})
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: ht}
			var r loadResult
			begin := time.Now()
			stall := watchStalls()
			for range 1000 {
				d := realLoadCall(client, srv.URL)
				if d == realLoadLost {
					r.lost++
				}
				r.lat = append(r.lat, d)
			}
			r.elapsed = time.Since(begin)
			worst := stall()
			slices.Sort(r.lat)
			m := ht.Measured()[srv.URL]
			t.Logf("%v; %d hedges, %d won, suppressed %v; the process's longest stall %v", r, m.HedgesStarted, m.HedgesWon, m.Suppressed, worst.Round(time.Millisecond))
			if r.lost > 0 || m.HedgesStarted < 15 || r.quantile(0.99) > 150*time.Millisecond {
				if worst > 100*time.Millisecond && r.lost == 0 && m.HedgesStarted >= 15 {
					t.Skipf("p99 %v, but the machine stopped this process for %v: the tail measures the machine", r.quantile(0.99), worst)
				}
				t.Errorf("%d lost, %d hedges, p99 %v: want none lost, the stragglers hedged and p99 well under 300ms", r.lost, m.HedgesStarted, r.quantile(0.99))
			}
		})
	}
}
