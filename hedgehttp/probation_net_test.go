package hedgehttp

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/replica"
)

// Two replicas, one swallowing requests (it answers nothing until the request is cancelled):
// every call is rescued by its hedge, so no attempt fails, yet the swallowing replica is
// ejected, because its cancelled losers had run past the threshold and are reported as
// replica.Slow.
func TestReplicaSwallowingRequestsEjected(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			hole, holeBase, _ := startCountingServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}))
			good, goodBase, _ := startCountingServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "ok")
			}))
			// Both servers trust their own certificates; one base transport that trusts
			// both is more than the test needs: route by address instead.
			holeAddr, goodAddr := hole.Listener.Addr().String(), good.Listener.Addr().String()
			var ejected atomic.Int32
			tr := newTransport(t, Config{
				Policy: hedge.Config{Trigger: hedge.After(10 * time.Millisecond), Budget: budget.Config{Off: true}},
				Next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if r.URL.Host == holeAddr {
						return holeBase.RoundTrip(r)
					}
					return goodBase.RoundTrip(r)
				}),
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(string) []string { return []string{holeAddr, goodAddr} },
				Replica: replica.Config{Balancer: replica.RoundRobin, ConsecutiveSlow: 3, SlowFor: -1,
					OnEjection: func(i int, _, _ time.Time) {
						if i == 0 {
							ejected.Add(1)
						}
					}},
			})
			const calls = 20
			ok, errs := runCalls(t, tr, good.URL, calls)
			if ok != calls {
				t.Fatalf("%d of %d calls succeeded; errors: %v", ok, calls, errs[:min(len(errs), 5)])
			}
			pool := tr.Replicas("svc")
			waitFor(5*time.Second, func() bool { return pool.Set().Outstanding(0)+pool.Set().Outstanding(1) == 0 })
			if ejected.Load() == 0 {
				t.Errorf("the replica swallowing requests was never ejected (stats %+v)", pool.Set().Stats(time.Now(), 0))
			}
		})
	}
}
