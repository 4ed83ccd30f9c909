package hedgehttp

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

// startAwareReplicas is two replicas behind Queues of one worker each, for StartAware: /fast
// answers at once; /slow keeps a first attempt until it is cancelled (a straggler in service)
// and answers a copy at once; /hold keeps the worker until the test lets go.
type startAwareReplicas struct {
	srv    [2]*connServer
	q      [2]*Queue
	base   *http.Transport
	addrs  []string
	copies [2]atomic.Int32 // copies (hedges) that reached a handler, by replica
	holds  [2]chan struct{}
	unhold [2]chan struct{}
	held   [2]chan error
}

func startStartAwareReplicas(t *testing.T, proto string, cfg QueueConfig) *startAwareReplicas {
	rs := &startAwareReplicas{}
	for i := range 2 {
		rs.holds[i], rs.unhold[i], rs.held[i] = make(chan struct{}, 1), make(chan struct{}), make(chan error, 1)
		rs.q[i] = mustQueue(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			isCopy := r.Header.Get(AttemptHeader) != ""
			if isCopy {
				rs.copies[i].Add(1)
			}
			switch {
			case r.URL.Path == "/hold":
				rs.holds[i] <- struct{}{}
				select {
				case <-rs.unhold[i]:
				case <-time.After(10 * time.Second):
				}
			case r.URL.Path == "/slow" && !isCopy:
				select {
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Second): // a bound, never reached when the test passes
				}
			}
			fmt.Fprintf(w, "replica %d, copy %v", i, isCopy)
		}), cfg)
		if i == 0 {
			rs.srv[i], rs.base = startConnServer(t, proto, rs.q[i])
		} else {
			rs.srv[i], _ = startConnServer(t, proto, rs.q[i])
		}
	}
	rs.addrs = []string{rs.srv[0].Listener.Addr().String(), rs.srv[1].Listener.Addr().String()}
	return rs
}

// hold occupies replica i's only worker until release is called.
func (rs *startAwareReplicas) hold(t *testing.T, i int) (release func()) {
	t.Helper()
	go func() {
		resp, err := rs.base.RoundTrip(mustRequest(t, "GET", rs.srv[i].URL+"/hold", nil))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		rs.held[i] <- err
	}()
	select {
	case <-rs.holds[i]:
	case <-time.After(5 * time.Second):
		t.Fatalf("the request holding replica %d never ran", i)
	}
	return func() {
		close(rs.unhold[i])
		if err := <-rs.held[i]; err != nil {
			t.Error(err)
		}
	}
}

// TestStartAwareHedgesStragglersInServiceNotQueuedRequests: with StartAware, over real
// servers that send start signals, a first attempt that has been in service past the
// threshold is hedged (to the other replica, whose copy wins), and one still waiting in a
// queue is never hedged however long it waits: its copy would only add load.
func TestStartAwareHedgesStragglersInServiceNotQueuedRequests(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			rs := startStartAwareReplicas(t, proto, QueueConfig{Workers: 1, Queue: 4})
			tr := newTransport(t, Config{
				Policy: hedge.Config{Trigger: hedge.StartAware(0.9, hedge.Adaptive{MinimumDelay: 20 * time.Millisecond}),
					Budget: budget.Config{Off: true}},
				Next:     rs.base,
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(string) []string { return rs.addrs },
			})
			get := func(path string) string {
				t.Helper()
				resp, err := tr.RoundTrip(mustRequest(t, "GET", rs.srv[0].URL+path, nil))
				if err != nil {
					t.Fatal(err)
				}
				return readAll(t, resp)
			}
			hedges := func() int64 { return tr.Measured()["svc"].HedgesStarted }
			// Warm the estimator (fast answers: the threshold sits at MinimumDelay) and let
			// the policy see that these servers send start signals.
			for range 30 {
				get("/fast")
			}
			if m := tr.Measured()["svc"]; !m.Warm || hedges() != 0 {
				t.Fatalf("after warming: %+v", m)
			}

			// An in-service straggler: its server said it started, and it runs past the
			// threshold. The hedge goes to the other replica and wins.
			if b := get("/slow"); b != "replica 0, copy true" && b != "replica 1, copy true" {
				t.Fatalf("a straggler in service was answered %q, want the hedge's answer", b)
			}
			if hedges() != 1 {
				t.Fatalf("%d hedges for one straggler in service, want 1", hedges())
			}

			// A queued request: both workers are busy, so the call waits in a queue with no
			// start signal. However long it waits (here 10 thresholds), it is not hedged.
			release0, release1 := rs.hold(t, 0), rs.hold(t, 1)
			done := make(chan string, 1)
			go func() {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", rs.srv[0].URL+"/fast", nil))
				if err != nil {
					done <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- string(b)
			}()
			if !waitFor(5*time.Second, func() bool { return rs.q[0].Stats().Queued+rs.q[1].Stats().Queued == 1 }) {
				t.Fatal("the call never queued")
			}
			if waitFor(200*time.Millisecond, func() bool { return hedges() > 1 || rs.q[0].Stats().Queued+rs.q[1].Stats().Queued > 1 }) {
				t.Errorf("a queued request was hedged: %d hedges, queues %+v %+v", hedges(), rs.q[0].Stats(), rs.q[1].Stats())
			}
			release0()
			release1()
			if b := <-done; b != "replica 0, copy false" && b != "replica 1, copy false" {
				t.Errorf("the queued call was answered %q, want its own answer once it ran", b)
			}
			if hedges() != 1 {
				t.Errorf("%d hedges, want only the straggler's", hedges())
			}
			checkConnsClosed(t, tr, rs.srv[0], rs.srv[1])
		})
	}
}

// TestStartAwareWithoutStartSignalsFallsBackToTheClientsInference: against servers that send
// no start signal, StartAware behaves as AtQuantile does, client-only: a straggler is hedged
// once a later call has overtaken it (then it is known to be in service), and not before,
// however long it runs.
func TestStartAwareWithoutStartSignalsFallsBackToTheClientsInference(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			// No load reports either: they would tell the client what no start signal does.
			rs := startStartAwareReplicas(t, proto, QueueConfig{Workers: 1, Queue: 4, NoStartSignal: true, NoLoadReport: true})
			tr := newTransport(t, Config{
				Policy: hedge.Config{Trigger: hedge.StartAware(0.9, hedge.Adaptive{MinimumDelay: 20 * time.Millisecond}),
					Budget: budget.Config{Off: true}},
				Next:     rs.base,
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(string) []string { return rs.addrs },
			})
			get := func(path string) string {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", rs.srv[0].URL+path, nil))
				if err != nil {
					return err.Error()
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return string(b)
			}
			hedges := func() int64 { return tr.Measured()["svc"].HedgesStarted }
			for range 30 {
				get("/fast")
			}
			if m := tr.Measured()["svc"]; !m.Warm || hedges() != 0 {
				t.Fatalf("after warming: %+v", m)
			}
			done := make(chan string, 1)
			go func() { done <- get("/slow") }()
			if !waitFor(5*time.Second, func() bool { return rs.q[0].Stats().Running+rs.q[1].Stats().Running == 1 }) {
				t.Fatal("the straggler never started")
			}
			// Nothing has overtaken it, and no server says it started: not hedged, for 10
			// thresholds.
			if waitFor(200*time.Millisecond, func() bool { return hedges() > 0 }) {
				t.Fatalf("hedged with nothing to tell it is in service: %+v", tr.Measured()["svc"])
			}
			// A later call answers first (on the other replica): the straggler is in service,
			// and is hedged soon after.
			if b := get("/fast"); b != "replica 0, copy false" && b != "replica 1, copy false" {
				t.Fatalf("the overtaking call was answered %q", b)
			}
			select {
			case b := <-done:
				if b != "replica 0, copy true" && b != "replica 1, copy true" {
					t.Errorf("the straggler was answered %q, want its hedge's answer", b)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the overtaken straggler was never hedged: %+v", tr.Measured()["svc"])
			}
			if hedges() != 1 {
				t.Errorf("%d hedges, want 1", hedges())
			}
			checkConnsClosed(t, tr, rs.srv[0], rs.srv[1])
		})
	}
}
