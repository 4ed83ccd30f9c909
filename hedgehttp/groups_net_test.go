package hedgehttp

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/replica"
)

// zoneLog records which replica each attempt of each call reached.
type zoneLog struct {
	mu      sync.Mutex
	seen    map[string]map[int]string // call -> attempt index -> replica name
	arrived arrivals                  // "call/attempt": closed once the attempt reached a replica
}

func (z *zoneLog) record(call string, k int, name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.seen[call] == nil {
		z.seen[call] = map[int]string{}
	}
	if _, again := z.seen[call][k]; !again {
		close(z.arrived.of(call + "/" + strconv.Itoa(k)))
	}
	z.seen[call][k] = name
}

// arrivals hands out one channel per key, made on first use.
type arrivals struct{ m sync.Map }

func (a *arrivals) of(key string) chan struct{} {
	ch, _ := a.m.LoadOrStore(key, make(chan struct{}))
	return ch.(chan struct{})
}

// of returns the attempts of call once at least n have arrived (or after 5s).
func (z *zoneLog) of(call string, n int) map[int]string {
	var out map[int]string
	waitFor(5*time.Second, func() bool {
		z.mu.Lock()
		defer z.mu.Unlock()
		out = maps.Clone(z.seen[call])
		return len(out) >= n
	})
	return out
}

// Two groups of two replicas, local and remote (5ms farther): first attempts all go local;
// hedges go local while a healthy unused local replica exists, remote otherwise.
//
// The pool decides at each attempt's pick, from the replicas the call's earlier picks took;
// the state machine numbers attempts as it starts them, and each hedge picks on its own
// goroutine, which a busy machine may run late (after a later hedge's, or after the call was
// decided, before the first attempt was sent). An attempt that picks after a later-numbered
// one took the last unused local replica rightly goes remote. So each attempt picks only
// once the one before it has reached its replica (testHookPick): the attempt numbers the
// test asserts on are then the order of the picks.
func TestReplicaGroupsOverHTTP(t *testing.T) {
	checkGoroutines(t)
	var stuck atomic.Bool // local replicas hang until their attempt loses
	zl := &zoneLog{seen: map[string]map[int]string{}}
	server := func(name string, delay time.Duration) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k, _ := strconv.Atoi(r.Header.Get(AttemptHeader))
			zl.record(r.Header.Get("X-Call"), k, name)
			wait := delay
			if delay == 0 && stuck.Load() {
				wait = 10 * time.Second // bounded: the test's calls end long before
			}
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	names := []string{"local0", "local1", "remote0", "remote1"}
	addr := map[string]string{}
	for i, n := range names {
		addr[addr0(server(n, time.Duration(i/2)*5*time.Millisecond))] = n
	}
	byName := map[string]string{}
	for a, n := range addr {
		byName[n] = a
	}
	groups := []replica.Group{
		{Addrs: []string{byName["local0"], byName["local1"]}},
		{Addrs: []string{byName["remote0"], byName["remote1"]}},
	}
	next := &http.Transport{}
	defer next.CloseIdleConnections()
	tr, err := NewTransport(Config{
		Next:          next,
		Policy:        hedge.Config{Trigger: hedge.After(time.Millisecond), Attempts: 3, MaximumConcurrent: 3, Budget: budget.Config{Off: true}},
		ReplicaGroups: func(string) []replica.Group { return groups },
		Replica:       replica.Config{ConsecutiveFailures: 1, ConsecutiveSlow: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	inOrder := func(at *Transport, ctx context.Context, r *http.Request) {
		info, ok := hedge.AttemptFrom(ctx)
		if at != tr || !ok || info.Index == 0 {
			return // another test's call, or a first attempt
		}
		select {
		case <-zl.arrived.of(r.Header.Get("X-Call") + "/" + strconv.Itoa(info.Index-1)):
		case <-ctx.Done():
		}
	}
	testHookPick.Store(&inOrder)
	t.Cleanup(func() { testHookPick.Store(nil) })
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	calls := 0
	// call makes a call with the Hedge-Trigger header trigger (none: the policy's) and
	// returns the winner and the replica of each of its first n attempts.
	call := func(trigger string, n int) (string, map[int]string) {
		t.Helper()
		calls++
		id := strconv.Itoa(calls)
		req, _ := http.NewRequest(http.MethodGet, "http://svc.internal/", nil)
		req.Header.Set("X-Call", id)
		if trigger != "" {
			req.Header.Set(TriggerHeader, trigger)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(body), zl.of(id, n)
	}
	isLocal := func(n string) bool { return n == "local0" || n == "local1" }

	// Local replicas answer at once: every first attempt stays local, on both of them (not
	// hedged: a slow machine would hedge some of them after 1ms).
	first := map[string]int{}
	for range 20 {
		won, seen := call("none", 1)
		if len(seen) != 1 || !isLocal(seen[0]) || won != seen[0] {
			t.Fatalf("fast local: %q won, attempts %v; want one local attempt", won, seen)
		}
		first[seen[0]]++
	}
	if first["local0"] == 0 || first["local1"] == 0 {
		t.Errorf("first attempts %v, want both local replicas", first)
	}

	// Local replicas hang: the first hedge goes to the other local replica, the second to a
	// remote one, which answers.
	stuck.Store(true)
	for range 5 {
		won, seen := call("", 3)
		if !isLocal(seen[0]) || !isLocal(seen[1]) || seen[0] == seen[1] || isLocal(seen[2]) || isLocal(won) {
			t.Errorf("hung local: %q won, attempts %v; want local, the other local, then remote", won, seen)
		}
	}

	// local1 ejected: the first hedge has no healthy unused local replica left, and goes remote.
	pool := tr.Replicas("http://svc.internal:80")
	pool.Set().Report(time.Now(), pool.Index(byName["local1"]), replica.Failure)
	for range 5 {
		won, seen := call("", 2)
		if seen[0] != "local0" || isLocal(seen[1]) || isLocal(won) {
			t.Errorf("local1 ejected: %q won, attempts %v; want local0, then remote", won, seen)
		}
	}
}

// addr0 is a test server's host:port.
func addr0(s *httptest.Server) string { return s.Listener.Addr().String() }

func TestReplicaGroupsConfigErrors(t *testing.T) {
	_, err := NewTransport(Config{Replicas: func(string) []string { return nil }, ReplicaGroups: func(string) []replica.Group { return nil }})
	if err == nil {
		t.Error("Replicas and ReplicaGroups together were accepted")
	}
	tr, err := NewTransport(Config{ReplicaGroups: func(string) []replica.Group { return []replica.Group{{}} }})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://svc.internal/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrConfig) {
		t.Error("an empty group was accepted")
	}
}
