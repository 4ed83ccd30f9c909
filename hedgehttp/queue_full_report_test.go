package hedgehttp

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/hedgekit/hedge"
)

// A request the queue turns away (503 with Retry-After: the queue is full, or a hedged waiter
// pushed out by a first attempt) carries the queue's load report too, as hedgegrpc's queue
// reports on the calls it turns away. It is the most telling report a server sends: without
// it the replica's latest report, from a response that left while the queue was still short,
// counts for LoadMaxAge more, and the replica choice keeps reading a full replica as a
// light one.
func TestQueueTurnedAwayCarriesReport(t *testing.T) {
	for _, off := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			g := newGate()
			q := mustQueue(t, g, QueueConfig{Workers: 1, Queue: 1, HedgedLast: true, NoLoadReport: off})
			_, doneA := serve(t.Context(), q, "/a", "")
			synctest.Wait()
			recB, doneB := serve(t.Context(), q, "/b", "1") // a hedge, waiting in the low lane
			synctest.Wait()
			_, doneC := serve(t.Context(), q, "/c", "") // a first attempt: it pushes /b out
			synctest.Wait()
			<-doneB
			recD, doneD := serve(t.Context(), q, "/d", "") // the queue is full: rejected
			<-doneD
			want := hedge.Load{Queued: 1, Busy: 1, Workers: 1}
			for _, tc := range []struct {
				name string
				code int
				v    string
			}{{"evicted", recB.Code, recB.Header().Get(LoadHeader)}, {"rejected", recD.Code, recD.Header().Get(LoadHeader)}} {
				if tc.code != http.StatusServiceUnavailable {
					t.Fatalf("%s: %d, want 503", tc.name, tc.code)
				}
				if off {
					if tc.v != "" {
						t.Errorf("NoLoadReport, %s: %s %q, want none", tc.name, LoadHeader, tc.v)
					}
					continue
				}
				if l, ok := ParseLoad(tc.v); !ok || l != want {
					t.Errorf("%s: %s %q reads as %+v (%v), want %+v", tc.name, LoadHeader, tc.v, l, ok, want)
				}
			}
			close(g.ch("/a"))
			close(g.ch("/c"))
			<-doneA
			<-doneC
		})
	}
}
