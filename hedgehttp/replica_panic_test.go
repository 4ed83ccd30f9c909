package hedgehttp

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
)

// An attempt whose Next panics ends on its replica all the same: the panic reaches the
// caller, and the replica is left with no attempt outstanding. A replica back from an
// ejection (on trial) with an attempt outstanding for good would rank as ejected, and never
// get a first attempt again.
func TestPanicInNextEndsTheAttemptOnItsReplica(t *testing.T) {
	for name, inline := range map[string]bool{"own goroutine": false, "inline": true} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					failing = iota // r1 answers 503
					panics         // r1 panics
					healthy        // r1 answers 200
				)
				var phase, toR1 atomic.Int32
				next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
					if r.URL.Host == "r1:1" {
						switch phase.Load() {
						case failing:
							return textResponse(r, 503, "down"), nil
						case panics:
							panic("next")
						}
						toR1.Add(1)
					}
					return textResponse(r, 200, "ok"), nil
				}}
				tr := newTransport(t, Config{
					Policy:             hedge.Config{Budget: emptyBudget}, // no copies: one attempt a call
					Next:               next,
					NextHonoursContext: inline, // the first attempt on the caller's goroutine, or on one of its own
					Key:                func(*http.Request) string { return "svc" },
					Replicas:           func(string) []string { return []string{"r0:1", "r1:1"} },
					Replica:            replica.Config{Balancer: replica.RoundRobin, ConsecutiveFailures: 1, BaseEjection: time.Second},
				})
				// get makes a call and returns the panic that reached RoundTrip's caller, if any.
				get := func() (panicked any) {
					defer func() { panicked = recover() }()
					req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
					if resp, err := tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
					return nil
				}
				set := func() *replica.Set { return tr.Replicas("svc").Set() }
				for i := 0; tr.Replicas("svc") == nil || !set().Ejected(time.Now(), 1); i++ {
					if i == 10 {
						t.Fatal("setup: r1 not ejected after its 503s")
					}
					get()
				}
				time.Sleep(2 * time.Second) // the ejection is over: r1 is on trial
				phase.Store(panics)
				var pe any
				for i := 0; pe == nil; i++ {
					if i == 10 {
						t.Fatal("setup: no call reached r1")
					}
					pe = get()
				}
				if _, ok := pe.(*hedge.PanicError); !ok {
					t.Fatalf("the call to r1 panicked with %T %v; want a *hedge.PanicError", pe, pe)
				}
				synctest.Wait()
				if n := set().Outstanding(1); n != 0 {
					t.Fatalf("after Next panicked on r1, r1 has %d attempts outstanding; want 0", n)
				}
				phase.Store(healthy)
				for range 10 {
					if p := get(); p != nil {
						t.Fatalf("a call panicked with r1 healthy: %v", p)
					}
				}
				if toR1.Load() == 0 {
					t.Fatal("r1, back from its ejection and answering, got none of 10 calls after Next panicked on it")
				}
			})
		})
	}
}
