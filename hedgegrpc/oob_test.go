package hedgegrpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
)

// These tests run the out-of-band reports (oob.go) between real loopback servers and
// clients. Reports are pushed on the server's real-time ticker, so a test waits, bounded in
// time, for the report it needs to have arrived (the oobReceived hook, or the policy's view)
// before it asserts; no assertion depends on how long anything took.

// oobInterval is the interval the tests ask for: short, so that waits are short, and far
// inside LoadMaxAge, so that a report stays fresh on a loaded machine.
const oobInterval = 20 * time.Millisecond

// startOOBBackends starts n loopback backends, each behind its own queue (workers[i]
// workers) with out-of-band reports and no per-call report, and before(i)'s interceptor,
// when not nil, ahead of the queue. It returns the backends and their queues.
func startOOBBackends(t *testing.T, workers []int, b func(i int) *backend, before func(i int) grpc.UnaryServerInterceptor) ([]*backend, []*Queue) {
	t.Helper()
	bs := make([]*backend, len(workers))
	qs := make([]*Queue, len(workers))
	for i, w := range workers {
		q, err := NewQueue(QueueConfig{Workers: w, Queue: 8, QueueHealthCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		lis := listen(t)
		var opts []grpc.ServerOption
		if before != nil {
			opts = append(opts, grpc.ChainUnaryInterceptor(before(i)))
		}
		opts = append(opts, grpc.ChainUnaryInterceptor(q.UnaryServer), grpc.ChainStreamInterceptor(q.StreamServer))
		srv := grpc.NewServer(opts...)
		be := b(i)
		be.name, be.addr = "backend"+strconv.Itoa(i), lis.Addr().String()
		healthpb.RegisterHealthServer(srv, be)
		if err := q.RegisterOOB(srv, oobInterval); err != nil {
			t.Fatal(err)
		}
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		bs[i], qs[i] = be, q
	}
	return bs, qs
}

// holdingBackend makes backends that answer at once, but for calls to the "block" service,
// which each hold a worker until release is closed (see block).
func holdingBackend(release <-chan struct{}) func(int) *backend {
	return func(int) *backend {
		return &backend{check: func(_ context.Context, _ *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if req.Service == "block" {
				<-release
			}
			return serving(), nil
		}}
	}
}

// onOOB installs f as the oobReceived hook for the rest of the test.
func onOOB(t *testing.T, f func(addr string, l hedge.Load)) {
	oobReceived.Store(&f)
	t.Cleanup(func() { oobReceived.Store(nil) })
}

// TestOOBReportsReachPolicy: with Config.LoadReportInterval, the balancer opens the ORCA
// stream on the backend, whose queue sends no per-call report, and the call's policy sees the
// backend's load from the stream alone. The stream holds no worker of the queue.
func TestOOBReportsReachPolicy(t *testing.T) {
	checkLeaks(t)
	bs, qs := startOOBBackends(t, []int{5}, func(int) *backend { return answerAtOnce() }, nil)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	cc := dial(t, hi, bs)
	client := healthpb.NewHealthClient(cc)
	p := hi.Policy(checkMethod)
	calls := 0
	ok := waitFor(10*time.Second, func() bool {
		var trailer metadata.MD
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
			t.Fatal(err)
		}
		calls++
		if v := trailer.Get(orcaTrailer); len(v) != 0 {
			t.Fatalf("the queue sent a per-call report: %v", v)
		}
		_, w, ok := p.ServerQueue(time.Now())
		return ok && w == 5
	})
	if !ok {
		t.Fatalf("after %d calls the policy has no report of the backend's 5 workers", calls)
	}
	if q, _, _ := p.ServerQueue(time.Now()); q != 0 {
		t.Fatalf("ServerQueue reports %d queued at an idle backend", q)
	}
	if s := qs[0].Stats(); s.Running != 0 || s.Queued != 0 || s.Admitted != uint64(calls)+1 { // +1: the warm-up call
		t.Fatalf("queue stats %+v after %d calls: the report stream took a worker or was counted", s, calls)
	}
}

// TestOOBReportsReachPolicyBetweenPicks: a report reaches the policy of a call picked before
// as it arrives, not at the client's next pick. After one call, the backend's workers fill
// and a request queues behind them (from a plain client of their own), and the policy sees the
// queue while this client makes no call at all. Fed only at picks, it would still see the
// idle backend of the last one.
func TestOOBReportsReachPolicyBetweenPicks(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	be := holdingBackend(release)
	bs, qs := startOOBBackends(t, []int{2}, be, nil)
	var blockers sync.WaitGroup
	t.Cleanup(func() { close(release); blockers.Wait() })
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, LoadReportInterval: oobInterval})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	p := hi.Policy(checkMethod)
	if !waitFor(10*time.Second, func() bool { _, w, ok := p.ServerQueue(time.Now()); return ok && w == 2 }) {
		t.Fatal("the policy never saw a report of the backend's 2 workers")
	}
	if q, _, _ := p.ServerQueue(time.Now()); q != 0 {
		t.Fatalf("ServerQueue reports %d queued at an idle backend", q)
	}
	block(t, bs[0].addr, 3, &blockers)
	if !waitFor(10*time.Second, func() bool { s := qs[0].Stats(); return s.Running == 2 && s.Queued == 1 }) {
		t.Fatalf("the backend never filled: %+v", qs[0].Stats())
	}
	if !waitFor(10*time.Second, func() bool { q, _, ok := p.ServerQueue(time.Now()); return ok && q == 1 }) {
		q, w, ok := p.ServerQueue(time.Now())
		t.Fatalf("with no call since, the policy still reads %d queued of %d workers (%v), where the backend has reported 1 queued", q, w, ok)
	}
}

// TestOOBSteersHedges: three backends, one of which (busy) has both its workers held and two
// calls queued. Its reports say so, and with out-of-band reports on no hedge goes to it: each
// goes to the other backend its call has not used. Without them (the control: the same
// backends and calls) the balancer knows nothing of the busy backend until a call of its own
// went there, and sends hedges to it too. A call's
// primary answers once its hedge has reached a backend (ahead of the queue), so no call
// waits on the busy queue.
func TestOOBSteersHedges(t *testing.T) {
	checkLeaks(t)
	var arr arrivals
	release := make(chan struct{})
	var hedgesAt [3]atomic.Int32
	be := func(int) *backend {
		return &backend{check: func(ctx context.Context, _ *backend, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			if req.Service == "block" {
				<-release
				return serving(), nil
			}
			if attemptOf(ctx) == 0 {
				select {
				case <-arr.of(req.Service):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return serving(), nil
		}}
	}
	count := func(i int) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if attemptOf(ctx) > 0 {
				hedgesAt[i].Add(1)
				close(arr.of(req.(*healthpb.HealthCheckRequest).Service)) // one hedge per call (Attempts 2)
			}
			return handler(ctx, req)
		}
	}
	bs, qs := startOOBBackends(t, []int{2, 2, 2}, be, count)
	const busy = 1
	var blockers sync.WaitGroup
	t.Cleanup(func() { close(release); blockers.Wait() }) // before the servers stop

	// Both clients connect to every backend first, while all are idle: a call sent to the
	// busy backend before the others are READY would have nowhere else to hedge.
	var full atomic.Bool // a report of the busy backend's full queue has been kept
	var gaps reportGaps
	onOOB(t, func(addr string, l hedge.Load) {
		if l.Queued >= 2 {
			full.Store(true)
		}
		gaps.note(addr)
	})
	control := healthpb.NewHealthClient(dial(t, newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}}), bs))
	oob := healthpb.NewHealthClient(dial(t, newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{checkMethod}, LoadReportInterval: oobInterval}), bs))

	// Hold the busy backend's workers and fill part of its queue, from a plain client.
	block(t, bs[busy].addr, 4, &blockers)
	if !waitFor(10*time.Second, func() bool { s := qs[busy].Stats(); return s.Running == 2 && s.Queued == 2 }) {
		t.Fatalf("the busy backend never filled: %+v", qs[busy].Stats())
	}
	if !waitFor(10*time.Second, full.Load) {
		t.Fatal("no out-of-band report of the busy backend's queue arrived")
	}

	// run makes 30 hedged calls and returns how many hedges reached the busy backend.
	run := func(t *testing.T, client healthpb.HealthClient, prefix string) int32 {
		before := hedgesAt[busy].Load()
		for i := range 30 {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: prefix + strconv.Itoa(i)})
			cancel()
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		return hedgesAt[busy].Load() - before
	}
	t.Run("control", func(t *testing.T) {
		if n := run(t, control, "control-"); n == 0 {
			t.Fatal("without reports no hedge went to the busy backend: the test cannot tell steering from luck")
		}
	})
	t.Run("oob", func(t *testing.T) {
		gaps.reset()
		n := run(t, oob, "oob-")
		gap := gaps.longest()
		switch {
		case n == 0:
		case gap < hedge.LoadMaxAge:
			t.Fatalf("%d of 30 hedges went to the backend whose reports say its queue is full, every report fresh (longest gap %v)", n, gap)
		default:
			// The machine stalled a stream past LoadMaxAge: for a moment a backend had no
			// fresh report, and the pick could not avoid the busy one. Not what is tested.
			t.Logf("%d of 30 hedges went to the busy backend while a report was stale (gap %v)", n, gap)
		}
	})
}

// TestWeightedRoundRobinReadsOOBReports runs a plain grpc-go client with gRPC's own
// weighted_round_robin balancer (gRFC A58), its out-of-band reports on (gRPC's orca OOB
// listener), against two real servers behind our queues with RegisterOOB and no per-call
// report: one with 2 workers, one with 16, each with one worker held by a call that waits, so
// that every report finds the first at 8 times the utilisation of the second. Reading the
// reports, the balancer sends the second most of the traffic (it would round-robin, half and
// half, without them). It recomputes its weights on its own real-time ticker (every 100ms
// here), so the test makes calls, bounded in number and time, until the share has moved.
func TestWeightedRoundRobinReadsOOBReports(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	be := holdingBackend(release)
	bs, qs := startOOBBackends(t, []int{2, 16}, be, nil)
	var blockers sync.WaitGroup
	t.Cleanup(func() { close(release); blockers.Wait() })
	for i, b := range bs {
		block(t, b.addr, 1, &blockers)
		if !waitFor(10*time.Second, func() bool { return qs[i].Stats().Running == 1 }) {
			t.Fatalf("backend %d: the waiting call never started", i)
		}
	}
	const sc = `{"loadBalancingConfig":[{"weighted_round_robin":{"enableOobLoadReport":true,"oobReportingPeriod":"0.02s","blackoutPeriod":"0s","weightUpdatePeriod":"0.1s"}}]}`
	wrrShiftsToSecond(t, "wrroobtest", sc, bs, "sixteen-worker")
}

// TestOOBConfig checks the settings: the balancer's oobReportInterval as the interceptor
// writes it and as a service config may, and the errors for negative intervals.
func TestOOBConfig(t *testing.T) {
	for _, d := range []time.Duration{0, 50 * time.Millisecond, 1500 * time.Microsecond} {
		js := serviceConfigFor(d)
		var sc struct {
			LB []map[string]json.RawMessage `json:"loadBalancingConfig"`
		}
		if err := json.Unmarshal([]byte(js), &sc); err != nil || len(sc.LB) != 1 {
			t.Fatalf("%v: %s: %v", d, js, err)
		}
		cfg, err := builder{}.ParseConfig(sc.LB[0][BalancerName])
		if err != nil {
			t.Fatalf("%v: %s: %v", d, js, err)
		}
		if got := cfg.(*lbConfig).oob; got != d {
			t.Fatalf("%s: interval %v, want %v", js, got, d)
		}
	}
	for _, bad := range []string{`{"oobReportInterval":"-1s"}`, `{"oobReportInterval":"soon"}`, `{"oobReportInterval":5}`} {
		if _, err := (builder{}).ParseConfig(json.RawMessage(bad)); err == nil {
			t.Fatalf("%s: no error", bad)
		}
	}
	if _, err := NewInterceptor(Config{LoadReportInterval: -time.Millisecond}); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative LoadReportInterval: %v, want ErrConfig", err)
	}
	q, err := NewQueue(QueueConfig{QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.RegisterOOB(grpc.NewServer(), -time.Second); !errors.Is(err, ErrQueueConfig) {
		t.Fatalf("negative minInterval: %v, want ErrQueueConfig", err)
	}
}

// TestFeedOOB: at a pick, a backend's out-of-band report reaches the call's policy with the
// time it was received, unless it is older than LoadMaxAge or than the backend's latest
// per-call report (which the policy then already has, and which is newer).
func TestFeedOOB(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		age    time.Duration // of the out-of-band report
		callAt time.Duration // age of the latest per-call report; 0 = none
		fed    bool
	}{
		{"fresh", 10 * time.Millisecond, 0, true},
		{"older than LoadMaxAge", hedge.LoadMaxAge + time.Millisecond, 0, false},
		{"older than a per-call report", 10 * time.Millisecond, 5 * time.Millisecond, false},
		{"newer than a per-call report", 10 * time.Millisecond, 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy, err := hedge.New(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
			if err != nil {
				t.Fatal(err)
			}
			pool, err := replica.NewPool([]string{"a", "b"}, replica.Config{Balancer: replica.RoundRobin})
			if err != nil {
				t.Fatal(err)
			}
			bl := &backendLoad{}
			bl.oob.Store(&receivedLoad{at: now.Add(-tc.age), load: hedge.Load{Queued: 3, Busy: 4, Workers: 4}})
			if tc.callAt > 0 {
				bl.callAt.Store(now.Add(-tc.callAt).UnixNano())
			}
			p := newPicker([]readyBackend{{addr: "a"}, {addr: "b", load: bl}}, pool)
			if !p.oob {
				t.Fatal("a picker with a listening backend does not feed reports")
			}
			p.feedOOB(now, pool.Set(), policy)
			q, w, ok := policy.ServerQueue(now)
			if ok != tc.fed || ok && (q != 3 || w != 4) {
				t.Fatalf("ServerQueue = %d, %d, %v; want fed = %v (3 of 4)", q, w, ok, tc.fed)
			}
			if ok {
				// Received at now-age: it counts until LoadMaxAge after that, not after now.
				if _, _, still := policy.ServerQueue(now.Add(hedge.LoadMaxAge - tc.age)); still {
					t.Fatal("the report counts from the pick, not from when it was received")
				}
			}
		})
	}
	if newPicker([]readyBackend{{addr: "a"}}, nil).oob {
		t.Fatal("a picker without listening backends feeds reports")
	}
}

// TestDeliverReachesWatchedPolicies: a report, as it arrives, reaches the installed picker's
// replicas and every policy a pick has made the balancer watch, fed the latest reports when
// first seen; past maxWatched policies, watch declines (the pick then feeds the policy itself)
// and deliver does not reach the one declined. A policy without a pick for watchIdle (one a
// Reconfigure replaced) gives up its place and receives no more reports until it picks again.
func TestDeliverReachesWatchedPolicies(t *testing.T) {
	now := time.Now()
	pool, err := replica.NewPool([]string{"a", "b"}, replica.Config{Balancer: replica.P2C})
	if err != nil {
		t.Fatal(err)
	}
	var s oobState
	bl := &backendLoad{addr: "b", state: &s}
	bl.oob.Store(&receivedLoad{at: now, load: hedge.Load{Queued: 3, Busy: 4, Workers: 4}})
	p := newPicker([]readyBackend{{addr: "a"}, {addr: "b", load: bl}}, pool)
	s.install(p)
	if l, ok := pool.Set().Load(now, 1); !ok || l.Queued != 3 {
		t.Fatalf("installed picker's replica b: Load = %+v, %v; want the latest report (3 queued)", l, ok)
	}
	policies := make([]*hedge.Policy, maxWatched+1)
	for i := range policies {
		if policies[i], err = hedge.New(hedge.Config{Trigger: hedge.AtQuantile(0.95)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, policy := range policies[:maxWatched] {
		if !s.watch(now, p, policy) {
			t.Fatalf("policy %d: not watched", i)
		}
		if !s.watch(now, p, policy) {
			t.Fatalf("policy %d: not watched at its second pick", i)
		}
		if q, _, ok := policy.ServerQueue(now); !ok || q != 3 {
			t.Fatalf("policy %d first seen: ServerQueue = %d, %v; want the latest report (3 queued)", i, q, ok)
		}
	}
	extra := policies[maxWatched]
	if s.watch(now, p, extra) {
		t.Fatalf("watch took a policy past maxWatched (%d)", maxWatched)
	}
	later := now.Add(10 * time.Millisecond)
	bl.state.deliver(bl, &receivedLoad{at: later, load: hedge.Load{Queued: 0, Busy: 1, Workers: 4}})
	for i, policy := range policies[:maxWatched] {
		if q, _, ok := policy.ServerQueue(later); !ok || q != 0 {
			t.Fatalf("policy %d after delivery: ServerQueue = %d, %v; want the new report (0 queued)", i, q, ok)
		}
	}
	if _, _, ok := extra.ServerQueue(later); ok {
		t.Fatal("deliver reached a policy the balancer declined to watch")
	}
	if l, ok := pool.Set().Load(later, 1); !ok || l.Queued != 0 {
		t.Fatalf("replica b after delivery: Load = %+v, %v; want the new report", l, ok)
	}

	// watchIdle on, the watched policies have not picked since: extra takes a place, the
	// idle ones give theirs up, and reports reach extra alone, until one of them picks again.
	idle := now.Add(watchIdle)
	if !s.watch(idle, p, extra) {
		t.Fatal("watch declined a policy while every watched one had gone watchIdle without a pick")
	}
	if n := len(*s.policies.Load()); n != 1 {
		t.Fatalf("%d policies watched once the others went idle, want 1", n)
	}
	rl := &receivedLoad{at: idle, load: hedge.Load{Queued: 5, Busy: 4, Workers: 4}}
	bl.oob.Store(rl) // as OnLoadReport keeps it
	bl.state.deliver(bl, rl)
	if q, _, ok := extra.ServerQueue(idle); !ok || q != 5 {
		t.Fatalf("extra after delivery: ServerQueue = %d, %v; want the new report (5 queued)", q, ok)
	}
	if q, _, ok := policies[1].ServerQueue(idle); ok && q == 5 {
		t.Fatal("a report reached a policy idle for watchIdle")
	}
	if !s.watch(idle, p, policies[1]) {
		t.Fatal("a policy back from idle was not watched again")
	}
	if q, _, ok := policies[1].ServerQueue(idle); !ok || q != 5 {
		t.Fatalf("a policy back from idle: ServerQueue = %d, %v; want the latest report at its pick (5 queued)", q, ok)
	}

	s.install(nil)
	bl.state.deliver(bl, &receivedLoad{at: idle.Add(time.Millisecond), load: hedge.Load{Queued: 7, Busy: 4, Workers: 4}})
	if q, _, _ := extra.ServerQueue(idle); q != 5 {
		t.Fatalf("with no picker installed, a report still reached a policy (%d queued)", q)
	}
}

// TestOOBStreamTakesNoWorker: the report stream passes the queue's stream interceptor
// (StreamServer, and the one ServerOptions installs) without taking a worker: with one worker
// and no room to wait, a call made while the stream is open is still admitted.
func TestOOBStreamTakesNoWorker(t *testing.T) {
	checkLeaks(t)
	for _, name := range []string{"StreamServer", "ServerOptions"} {
		t.Run(name, func(t *testing.T) {
			q, err := NewQueue(QueueConfig{Workers: 1, Queue: -1, QueueHealthCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			opts := q.ServerOptions()
			if name == "StreamServer" {
				opts = []grpc.ServerOption{grpc.ChainUnaryInterceptor(q.UnaryServer), grpc.ChainStreamInterceptor(q.StreamServer)}
			}
			lis := bufconn.Listen(1 << 20)
			srv := grpc.NewServer(opts...)
			healthpb.RegisterHealthServer(srv, answerAtOnce())
			if err := q.RegisterOOB(srv, 0); err != nil {
				t.Fatal(err)
			}
			go srv.Serve(lis)
			t.Cleanup(srv.Stop)
			cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cc.Close() })
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stream, err := v3orcaservicegrpc.NewOpenRcaServiceClient(cc).StreamCoreMetrics(ctx, &v3orcaservicegrpc.OrcaLoadReportRequest{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := stream.Recv() // the stream is open at the server
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := loadOf(r); !ok || l.Busy != 0 || l.Workers != 1 {
				t.Fatalf("report %v: want 0 of 1 worker busy", r)
			}
			if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatalf("a call while the report stream is open: %v", err)
			}
		})
	}
}

// TestOOBRoutesFirstAttempts: two backends of three workers, two of the first's held by a
// plain client this one cannot see. With out-of-band reports the balancer sends this client's
// calls (no hedging, one at a time: nothing of its own outstanding anywhere) to the backend
// that reports room; without them (the control) it learns the busy backend's load only from a
// call of its own that went there.
func TestOOBRoutesFirstAttempts(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	var callsAt [2]atomic.Int32
	be := holdingBackend(release)
	count := func(i int) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if req.(*healthpb.HealthCheckRequest).Service != "block" {
				callsAt[i].Add(1)
			}
			return handler(ctx, req)
		}
	}
	bs, qs := startOOBBackends(t, []int{3, 3}, be, count)
	const busy = 0
	var blockers sync.WaitGroup
	t.Cleanup(func() { close(release); blockers.Wait() })
	var seen, idle atomic.Bool // reports of the busy backend's held workers, and of the other
	var gaps reportGaps
	onOOB(t, func(addr string, l hedge.Load) {
		if addr == bs[busy].addr && l.Busy >= 2 {
			seen.Store(true)
		}
		if addr == bs[1-busy].addr {
			idle.Store(true)
		}
		gaps.note(addr)
	})
	control := healthpb.NewHealthClient(dial(t, newInterceptor(t, Config{Policy: hedge.Config{}}), bs))
	oob := healthpb.NewHealthClient(dial(t, newInterceptor(t, Config{Policy: hedge.Config{}, LoadReportInterval: oobInterval}), bs))
	block(t, bs[busy].addr, 2, &blockers)
	if !waitFor(10*time.Second, func() bool { return qs[busy].Stats().Running == 2 }) {
		t.Fatalf("the busy backend never filled: %+v", qs[busy].Stats())
	}
	// run makes 20 calls, one at a time, and returns how many reached the busy backend.
	run := func(t *testing.T, client healthpb.HealthClient) int32 {
		before := callsAt[busy].Load()
		for i := range 20 {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "call" + strconv.Itoa(i)})
			cancel()
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		return callsAt[busy].Load() - before
	}
	t.Run("control", func(t *testing.T) {
		if n := run(t, control); n == 0 {
			t.Fatal("without out-of-band reports no call went to the busy backend: the test cannot tell routing from luck")
		}
	})
	t.Run("oob", func(t *testing.T) {
		// One call first, so that the balancer has both backends READY and their streams open.
		if _, err := oob.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "warm"}); err != nil {
			t.Fatal(err)
		}
		if !waitFor(10*time.Second, func() bool { return seen.Load() && idle.Load() }) {
			t.Fatalf("no out-of-band reports of both backends arrived (busy %v, idle %v)", seen.Load(), idle.Load())
		}
		gaps.reset()
		n := run(t, oob)
		gap := gaps.longest()
		switch {
		case n == 0:
		case gap < replica.RouteMaxAge:
			t.Fatalf("%d of 20 calls went to the backend whose reports say 2 of its 3 workers are busy, against none at the other (longest gap between reports %v)", n, gap)
		default:
			t.Logf("%d of 20 calls went to the busy backend while a report was too old to route by (gap %v)", n, gap)
		}
	})
}

// reportGaps tracks the longest wait for a backend's next out-of-band report.
type reportGaps struct {
	sync.Mutex
	last map[string]time.Time
	max  time.Duration // since reset
}

// note records that addr reported now.
func (g *reportGaps) note(addr string) {
	now := time.Now()
	g.Lock()
	defer g.Unlock()
	if at, ok := g.last[addr]; ok {
		g.max = max(g.max, now.Sub(at))
	}
	if g.last == nil {
		g.last = make(map[string]time.Time)
	}
	g.last[addr] = now
}

func (g *reportGaps) reset() {
	g.Lock()
	g.max = 0
	g.Unlock()
}

func (g *reportGaps) longest() time.Duration {
	g.Lock()
	defer g.Unlock()
	return g.max
}

// block sends n calls that the backend at addr holds until the test releases them (the
// "block" service), from a plain client of its own, each on a goroutine blockers counts.
func block(t *testing.T, addr string, n int, blockers *sync.WaitGroup) {
	t.Helper()
	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	for range n {
		blockers.Add(1)
		go func() {
			defer blockers.Done()
			_, _ = healthpb.NewHealthClient(plain).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "block"})
		}()
	}
}
