package hedgehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// One replica of three freezes: its server accepts connections and requests and never
// answers. With the recommended policy, warm from a second of calls to three healthy
// replicas, and a 1 s deadline per call, hedges rescue the calls whose first attempt went to
// the frozen replica, a third of them under round-robin (the backlog gate sees that the calls crossing their threshold are that
// replica's, not the host's): nearly every one of 600 calls succeeds (599 or 600 in most
// runs), and neither healthy replica is ejected.
func TestFrozenReplicaRecommended(t *testing.T) {
	checkGoroutines(t)
	var frozen atomic.Bool
	release := make(chan struct{})
	var srvs []*httptest.Server
	var addrs []string
	var reqs [3]atomic.Int32
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reqs[i].Add(1)
			if i == 0 && frozen.Load() {
				select { // frozen: no answer until the caller gives up (or the test ends)
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			time.Sleep(time.Millisecond)
			io.WriteString(w, "ok")
		}))
		srvs = append(srvs, srv)
		addrs = append(addrs, srv.Listener.Addr().String())
	}
	base := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		close(release)
		base.CloseIdleConnections()
		for _, s := range srvs {
			s.Close()
		}
	})
	var ejected [3]atomic.Int32
	tr := newTransport(t, Config{
		Policy:   hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		Next:     base,
		Key:      func(*http.Request) string { return "svc" },
		Replicas: func(string) []string { return addrs },
		Replica: replica.Config{Balancer: replica.RoundRobin, OnEjection: func(i int, _, _ time.Time) {
			ejected[i].Add(1)
		}},
	})
	get := func(i int) error {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", srvs[1].URL+"/", nil)
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	const calls, workers = 600, 8
	var wg sync.WaitGroup
	// The warm-up lasts a second and then until the budget (10 % of calls plus a reserve)
	// could fund a hedge for each call that goes first to the frozen replica, a third of
	// them, less what the calls themselves pay in. Until the replica is ejected (SlowFor, half
	// a second of Slow losses) its calls need hedges three times as fast as calls pay for
	// them, and what a second of warm-up leaves depends on how fast the machine ran in it: a
	// slow warm-up and a faster frozen spell left the budget dry, and one call of each of
	// the workers failed, 592 of 600.
	need := float64(calls)/3 - float64(calls)/10
	warm := time.Now().Add(time.Second)
	var warmed atomic.Bool
	for range workers {
		wg.Go(func() {
			for !warmed.Load() {
				if err := get(0); err != nil {
					t.Errorf("a call to healthy replicas failed: %v", err)
				}
			}
		})
	}
	funded := waitFor(9*time.Second, func() bool {
		return time.Now().After(warm) && tr.Measured()["svc"].Budget >= need
	})
	warmed.Store(true)
	wg.Wait()
	if !funded {
		t.Fatalf("the budget funds %v hedges after the warm-up, want %v", tr.Measured()["svc"].Budget, need)
	}
	frozen.Store(true)
	for i := range reqs {
		reqs[i].Store(0)
	}
	var ok, done atomic.Int32
	end := time.Now().Add(60 * time.Second)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				n := done.Add(1)
				if n > calls {
					return
				}
				if get(int(n)) == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := ok.Load(); got < 597 {
		t.Errorf("%d of %d calls succeeded with one replica of three frozen; want at least 597", got, calls)
	}
	if reqs[0].Load() == 0 {
		t.Error("the frozen replica got no request: the test exercised nothing")
	}
	if n := ejected[1].Load() + ejected[2].Load(); n > 0 {
		t.Errorf("healthy replicas were ejected %d times", n)
	}
	m := tr.Measured()["svc"]
	t.Logf("succeeded %d of %d; hedges %d, suppressed %v; the frozen replica got %d requests and was ejected %d times",
		ok.Load(), calls, m.HedgesStarted, m.Suppressed, reqs[0].Load(), ejected[0].Load())
}
