package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/sim"
)

// pointConfig is one real point: a setup at a load, in a cancellation mode, over a protocol.
// Every duration in it is wire time (already multiplied by the time scale).
type pointConfig struct {
	setup    sim.Setup
	loadPct  float64
	mode     string // sim.Ignored or sim.Reaches
	protocol string // HTTP1, HTTP2 or GRPC
	seed     uint64
	workers  int              // per replica
	replicas int              // servers
	clients  int              // independent clients; 0 = 1
	balancer string           // sim's balancer name; "" = p2c
	service  sim.Distribution // wire time
	slack    time.Duration    // the measured timer slack each server sleep is shortened by
	// serverScale multiplies every service time the servers draw (-server-scale): 1 serves
	// the model; anything else serves a model the simulator was not told of, to show that the
	// comparison notices.
	serverScale float64
	calls       int     // calls whose arrival is measured or warms up; more arrive until they end
	warmup      float64 // fraction of calls not measured

	concurrency int           // > 0: that many callers in a closed loop instead of the pacer
	maxLag      time.Duration // a call sent later than this after it was due stops the run
	maxInFlight int           // 0 = 200 × workers × replicas
	callTimeout time.Duration // a call that takes longer fails
	deadline    time.Duration // the whole point must end within this, or it fails
}

// diagnostics is what a real point says about the generator, beside its figures.
type diagnostics struct {
	LagP50Us     float64 `json:"lag_p50_us"` // how late the generator sent calls, wire µs
	LagP99Us     float64 `json:"lag_p99_us"`
	LagMaxUs     float64 `json:"lag_max_us"`
	MaxInFlight  int     `json:"max_in_flight"` // the most calls in flight at a send
	DurationSecs float64 `json:"duration_s"`    // wall time of the point
	Sent         int     `json:"sent"`          // calls sent, measured or not
	// CallsPerClient is how many of the measured calls each client made, with -clients.
	CallsPerClient []int `json:"calls_per_client,omitempty"`
	// PerSecond is the rate the measured calls arrived at (wire time): the closed loop's
	// throughput, which its simulated twin is offered.
	PerSecond float64 `json:"per_second,omitempty"`
	// OfferedPct is the measured calls' arrival rate as scheduled, in % of the model's: 100
	// once the schedule is normalised (see normalise).
	OfferedPct float64 `json:"offered_pct"`
	// HoldExcessP50Us is how much longer than its drawn service time a worker held a
	// measured call's winning attempt, at the median, in wire µs: the timer slack the
	// servers' shortened sleeps did not absorb while this point ran (the calibration measured
	// it with nothing else running).
	HoldExcessP50Us float64 `json:"hold_excess_p50_us"`
	// Split is where the calls answered by their first attempt spent their time, and the
	// client delay an open loop's twin carries (see clientDelays).
	Split Split `json:"split"`

	// lags and rest are the two parts of the client delays of the measured calls answered
	// by their first attempt (see clientDelays).
	lags, rest []time.Duration
	// Hedges is how late the client's timers fired (a closed loop's, measured by a probe
	// while the measured calls were sent: timers), how late the measured calls' hedges
	// started, and the client's delay on the hedges that won (hedged; see hedgeDelays).
	Hedges HedgeSplit `json:"hedges"`
	// restAt, timers and hedged are a closed loop's measured client delays, each where it was
	// measured (see closedDelay): the first attempts' (rest, again), the timers' and the
	// hedges'; sends are when its calls were sent, by index.
	restAt, timers, hedged trace
	sends                  []time.Duration
	// overheld is how much longer than its call each measured call's cancelled first
	// attempt held its worker ("reaches" mode; see hedgeDelays and tieDelay).
	overheld []time.Duration

	// arrived is how many requests of measured calls (first attempts and hedges) the servers
	// received; reached, how many of them a worker started. When the server finishes every
	// request it receives ("ignored"), the two are equal.
	arrived, reached int64
}

// rate is the Poisson arrival rate (calls per second of wire time) that keeps the workers busy
// loadPct of the time without hedges, as the simulator computes it.
func rate(loadPct float64, workers, replicas int, service sim.Distribution) float64 {
	return loadPct / 100 * float64(workers*replicas) / service.Mean().Seconds()
}

// callRecord is what the client saw of one call.
type callRecord struct {
	lat      time.Duration // from its due time to its end
	failed   bool
	rejected bool // failed before reaching the server: the adaptive limit, an open breaker
	hedges   int8 // hedged attempts started
	won      bool // a hedge answered first
	winner   int8 // attempt index of the winner; -1 if none
	ended    bool
	// hedge is the attempt index of its first hedge (-1: none); hedgeOff and firstOff are
	// when that hedge and the first attempt started, from the call's start in the core.
	hedge              int8
	hedgeOff, firstOff time.Duration
	// due, sent and end are when the call was due, sent and ended, in ns since the
	// accounts' t0 (the servers' clock).
	due, sent, end time.Duration
}

// runReal runs one point on loopback servers and returns its figures (latencies in wire ms).
func runReal(ctx context.Context, pc pointConfig) (sim.Point, diagnostics, error) {
	var diag diagnostics
	if pc.maxInFlight == 0 {
		pc.maxInFlight = 200 * pc.workers * pc.replicas
	}
	ctx, cancel := context.WithTimeout(ctx, pc.deadline)
	defer cancel()
	warm := int(pc.warmup * float64(pc.calls))
	// More calls arrive after the last measured one until every measured call has ended, as
	// in the simulator: the last measured calls see the same load as the first.
	total := pc.calls + pc.calls/2 + 1000
	acct := newAccounts(total, warm, pc.calls, pc.workers*pc.replicas)

	var reps []*server
	defer func() {
		for _, rp := range reps {
			rp.close()
		}
	}()
	reps, addrs, err := startReplicas(pc, acct)
	if err != nil {
		return sim.Point{}, diag, err
	}
	cl := &caller{pc: pc, ctx: ctx, warm: warm, acct: acct, recs: make([]callRecord, total), sup: map[string]int64{},
		firsts: make([]time.Duration, total)}
	defer func() {
		// At once: a fleet's clients (up to 256, each with a connection and a load stream to
		// every replica) closed one by one took minutes while the others' streams kept going.
		var wg sync.WaitGroup
		for _, c := range cl.clients {
			wg.Go(c.close)
		}
		wg.Wait()
	}()
	for range max(pc.clients, 1) {
		client, err := cl.newClient(addrs)
		if err != nil {
			return sim.Point{}, diag, fmt.Errorf("setup %q: %w", pc.setup.Name, err)
		}
		cl.clients = append(cl.clients, client)
	}
	cl.owner = clientOwners(total, len(cl.clients), pc.seed)
	cl.left.Store(int64(pc.calls - warm))
	pctx, stopPacer := context.WithCancel(ctx)
	defer stopPacer()
	cl.stopPacer = stopPacer

	var probe *timerProbe
	if pc.concurrency > 0 {
		probe = startTimerProbe(pc.seed, acct.t0, cl.measuring.Load)
	}
	p, err := pace(pctx, pc, warm, total, cl.send, func() int { return queued(reps) }, &diag)
	if probe != nil {
		diag.timers.d, diag.timers.when = probe.stop()
	}
	if err == nil || errors.Is(err, context.Canceled) && cl.left.Load() == 0 {
		if err := checkLag(p.lags, pc.maxLag); err != nil {
			return sim.Point{}, diag, err
		}
	}
	pt := sim.Point{Setup: pc.setup.Name, LoadPct: pc.loadPct, Cancellation: pc.mode, Seed: pc.seed, Suppressed: cl.sup,
		Replicas: pc.replicas, Clients: len(cl.clients)}
	if pc.replicas > 1 {
		pt.Balancer = pc.balancer
	}
	var behind *BehindError
	switch {
	case errors.As(err, &behind) && behind.Limit > 0 && (behind.Queued >= behind.InFlight/2 || queued(reps) >= behind.InFlight/2):
		// The calls in flight waited in the servers' queues as the limit stopped the run (or,
		// their losers left running, still do): the server, not the client, cannot keep up.
		// That is a collapse, a figure in its own right.
		pt.Collapse = true
		pt.Calls = behind.Call
		return pt, diag, nil
	case err != nil && !(errors.Is(err, context.Canceled) && cl.left.Load() == 0):
		if ctx.Err() != nil && cl.left.Load() > 0 && behind == nil {
			return pt, diag, fmt.Errorf("hedgeload: point did not end within %v: %w", pc.deadline, ctx.Err())
		}
		return pt, diag, err
	}
	if cl.left.Load() > 0 {
		// Every call was sent and the measured ones have still not ended: the queue never
		// drained.
		pt.Collapse = true
		return pt, diag, nil
	}
	if err := settle(pc, reps, acct); err != nil {
		return pt, diag, err
	}
	diag.arrived, diag.reached = acct.arrived.Load(), acct.reached.Load()
	if cl.owner != nil {
		diag.CallsPerClient = make([]int, len(cl.clients))
		for _, c := range cl.owner[warm:pc.calls] {
			diag.CallsPerClient[c]++
		}
	}
	cl.figures(&pt, &diag)
	return pt, diag, nil
}

// clientOwners draws, from seed, which of n clients makes each of total calls: one at random
// for each, so that each client's calls are a Poisson stream of their own (hedgesim's -clients
// splits its arrivals the same way). nil when n is 1.
func clientOwners(total, n int, seed uint64) []uint16 {
	if n <= 1 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0x636c69656e7473)) // "clients"
	owner := make([]uint16, total)
	for i := range owner {
		owner[i] = uint16(r.IntN(n))
	}
	return owner
}

// startReplicas starts the point's servers on loopback and returns them with their
// addresses. The servers it started before an error are returned too, for the caller to close.
func startReplicas(pc pointConfig, acct *accounts) ([]*server, []string, error) {
	var reps []*server
	for range pc.replicas {
		rp, err := startReplica(serverConfig{
			workers:  pc.workers,
			service:  pc.service,
			seed:     pc.seed,
			reaches:  pc.mode == sim.Reaches,
			protocol: pc.protocol,
			maxQueue: 2000 * pc.workers,
			slack:    pc.slack,
			scale:    pc.serverScale,
			reports:  pc.setup.ServerLoad,
			stream:   pc.setup.ServerLoad && pc.setup.LoadInterval > 0,
		}, acct)
		if err != nil {
			return reps, nil, err
		}
		reps = append(reps, rp)
	}
	addrs := make([]string, len(reps))
	for i, rp := range reps {
		addrs[i] = rp.addr
	}
	return reps, addrs, nil
}

// caller is the client side of one real point: it sends each call, records what it saw, and
// marks the window of the measured calls for the figures.
type caller struct {
	pc        pointConfig
	ctx       context.Context // each call's parent: the point's deadline
	warm      int
	acct      *accounts
	clients   []loadClient // each with policies of its own
	owner     []uint16     // the client that makes each call; nil with one client
	stopPacer func()

	recs      []callRecord
	left      atomic.Int64 // measured calls not yet ended
	measuring atomic.Bool
	supMu     sync.Mutex
	sup       map[string]int64 // suppressions during the measured calls, by reason
	// firsts are the first attempts' starts (nfirst of them) and hedges the hedges' (under
	// supMu), on the core's clock in ns since the accounts' t0: see hedgeDelays.
	firsts   []time.Duration
	nfirst   atomic.Int64
	hedgeEvs []hedgeStart

	winStart, winEnd time.Time
	// afterSent is when call pc.calls, the first after the measured ones, was sent: in a
	// closed loop each send follows an end, so the measured calls' sends span their rate.
	afterSent          time.Time
	areaStart, areaEnd float64
	startOnce, endOnce sync.Once
}

// newClient builds the point's client: the setup's policy, its observer counting the
// suppressions of the measured calls, over the servers at addrs.
func (cl *caller) newClient(addrs []string) (loadClient, error) {
	pol := cl.pc.setup.Config
	user := pol.Observer
	pol.Observer = func(e hedge.Event) {
		if user != nil {
			user(e)
		}
		switch {
		case e.Kind == hedge.AttemptStarted && e.Attempt == 0:
			if n := cl.nfirst.Add(1); n <= int64(len(cl.firsts)) {
				cl.firsts[n-1] = e.Time.Sub(cl.acct.t0)
			}
		case e.Kind == hedge.HedgeStarted:
			cl.supMu.Lock()
			cl.hedgeEvs = append(cl.hedgeEvs, hedgeStart{at: e.Time.Sub(cl.acct.t0), delay: e.Delay, attempt: e.Attempt})
			cl.supMu.Unlock()
		}
		if e.Kind == hedge.HedgeSuppressed && cl.measuring.Load() {
			cl.supMu.Lock()
			cl.sup[e.Reason.String()]++
			cl.supMu.Unlock()
		}
	}
	var replicasOf func(string) []string
	if cl.pc.replicas > 1 {
		replicasOf = func(string) []string { return addrs }
	}
	return newLoadClient(cl.pc.protocol, pol, replicasOf, cl.pc.balancer, addrs, cl.pc.setup.LoadInterval)
}

// send makes call i, due at due, and records it; the last measured call to end stops the pacer.
func (cl *caller) send(i int, due time.Time) {
	pc := cl.pc
	measured := i >= cl.warm && i < pc.calls
	if i == cl.warm {
		cl.startOnce.Do(func() {
			cl.measuring.Store(true)
			cl.winStart = due
			cl.areaStart = cl.acct.busyArea(due)
		})
	}
	if i == pc.calls {
		cl.measuring.Store(false)
		cl.afterSent = due
	}
	rec := &cl.recs[i]
	rec.winner, rec.hedge = -1, -1
	rec.due, rec.sent = due.Sub(cl.acct.t0), time.Since(cl.acct.t0)
	cctx, ccancel := context.WithTimeout(cl.ctx, pc.callTimeout)
	defer ccancel()
	var lg hedge.Log
	client := cl.clients[0]
	if cl.owner != nil {
		client = cl.clients[cl.owner[i]]
	}
	if err := client.call(hedge.WithLog(cctx, &lg), i); err != nil {
		rec.failed = true
		rec.rejected = sim.Rejected(err) // refused before any attempt reached a server
	}
	end := time.Now()
	rec.lat = end.Sub(due)
	rec.end = end.Sub(cl.acct.t0)
	for _, a := range lg.Attempts {
		if a.Hedge {
			rec.hedges++
			if rec.hedge < 0 || a.Index < int(rec.hedge) {
				rec.hedge, rec.hedgeOff = int8(a.Index), a.Offset
			}
		}
		if a.Index == 0 {
			rec.firstOff = a.Offset
		}
		if a.Result == hedge.OK {
			rec.winner = int8(a.Index)
			rec.won = a.Hedge
		}
	}
	rec.ended = true
	if measured && cl.left.Add(-1) == 0 {
		cl.endOnce.Do(func() {
			cl.winEnd = end
			cl.areaEnd = cl.acct.busyArea(end)
			cl.stopPacer()
		})
	}
}

// pace sends the point's calls on their schedule (or from closed-loop callers) until ctx ends,
// and writes the generator's figures into diag; queued counts the requests waiting in the
// servers' queues, which a BehindError over the limit of calls in flight reports.
func pace(ctx context.Context, pc pointConfig, warm, total int, send func(int, time.Time), queued func() int, diag *diagnostics) (*pacer, error) {
	lambda := rate(pc.loadPct, pc.workers, pc.replicas, pc.service)
	offs := offsets(pc, total, lambda)
	if pc.concurrency == 0 {
		normalise(offs, lambda, warm, pc.calls) // offer the model's load over the measured calls
		if warm > 0 && pc.calls > warm+1 {
			diag.OfferedPct = 100 * float64(pc.calls-warm) / (offs[pc.calls-1] - offs[warm-1]).Seconds() / lambda
		}
	}
	p := &pacer{
		offsets:     offs,
		maxLag:      pc.maxLag,
		maxInFlight: pc.maxInFlight,
		send:        send,
		closed:      pc.concurrency,
		queued:      queued,
	}
	t0 := time.Now()
	err := p.run(ctx, t0.Add(5*time.Millisecond))
	diag.DurationSecs = time.Since(t0).Seconds()
	diag.Sent = len(p.lags)
	diag.MaxInFlight = p.maxSeen
	if len(p.lags) > 0 {
		lags := slices.Clone(p.lags)
		slices.Sort(lags)
		diag.LagP50Us = float64(lags[len(lags)/2]) / 1e3
		diag.LagP99Us = float64(lags[len(lags)*99/100]) / 1e3
		diag.LagMaxUs = float64(lags[len(lags)-1]) / 1e3
	}
	return p, err
}

// settle waits for the servers to finish the losers they finish regardless ("ignored"), which
// still count in the server's figures.
func settle(pc pointConfig, reps []*server, acct *accounts) error {
	for _, rp := range reps {
		if err := rp.drain(time.Now().Add(pc.callTimeout)); err != nil {
			return err
		}
	}
	if pc.mode == sim.Ignored {
		// A loser that arrived just as its call ended may not have joined its queue yet when
		// the queue looked empty: wait, for a while, until every request received has started
		// (unless a full queue turned some away: those never start).
		deadline := time.Now().Add(pc.callTimeout)
		for acct.reached.Load() < acct.arrived.Load() && rejected(reps) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		for _, rp := range reps {
			if err := rp.drain(deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// figures computes pt's figures over the measured calls, as the simulator computes them.
func (cl *caller) figures(pt *sim.Point, diag *diagnostics) {
	pc, warm, acct, recs := cl.pc, cl.warm, cl.acct, cl.recs
	n := pc.calls - warm
	var lat []int64
	var failed, rejected, hedges, wins int
	var wasted, served int64
	for i := warm; i < pc.calls; i++ {
		r := &recs[i]
		if r.rejected {
			rejected++
		}
		if r.failed {
			failed++
		} else {
			lat = append(lat, int64(r.lat))
		}
		hedges += int(r.hedges)
		if r.won {
			wins++
		}
		for k := range maxAttempts {
			s := acct.served[i*maxAttempts+k].Load()
			served += s
			if k != int(r.winner) {
				wasted += s
			}
		}
	}
	diag.HoldExcessP50Us = holdExcessP50Us(pc, recs, warm, acct)
	diag.lags, diag.rest, diag.restAt.when, diag.Split = clientDelays(pc, recs, warm, acct)
	diag.restAt.d = diag.rest
	diag.hedged.d, diag.hedged.when, diag.overheld, diag.Hedges = hedgeDelays(pc, recs, warm, acct, cl.firsts[:min(int(cl.nfirst.Load()), len(cl.firsts))], cl.hedgeEvs)
	if t := diag.timers.d; len(t) > 0 {
		diag.Hedges.Probes = len(t)
		diag.Hedges.TimerLateP50Us, diag.Hedges.TimerLateMeanUs, diag.Hedges.TimerLateP99Us = pctUs(t, .5), meanUs(t), pctUs(t, .99)
	}
	for i := 0; pc.concurrency > 0 && i < len(recs) && recs[i].ended; i++ {
		diag.sends = append(diag.sends, recs[i].sent)
	}
	slices.Sort(lat)
	pt.P50Ms = quantileMs(lat, n, 0.50)
	pt.P99Ms = quantileMs(lat, n, 0.99)
	pt.P999Ms = quantileMs(lat, n, 0.999)
	pt.MeanMs = sim.MeanMs(lat, failed, false)
	pt.Calls = pc.calls
	pt.RequestsPerCall = float64(acct.reached.Load()) / float64(n)
	pt.HedgeRate = float64(hedges) / float64(n)
	if hedges > 0 {
		pt.HedgeWinRate = float64(wins) / float64(hedges)
	}
	pt.RejectedPct = 100 * float64(rejected) / float64(n)
	pt.FailedPct = 100 * float64(failed) / float64(n)
	if span := cl.winEnd.Sub(cl.winStart); span > 0 {
		diag.PerSecond = float64(n) / span.Seconds()
		if sent := cl.afterSent.Sub(cl.winStart); pc.concurrency > 0 && sent > 0 {
			// The window to the last measured call's end would count that call's whole
			// latency (a straggler's 100 ms of a one-second window) against the rate; the
			// sends of a closed loop keep its pace.
			diag.PerSecond = float64(n) / sent.Seconds()
		}
		pt.UtilisationPct = 100 * (cl.areaEnd - cl.areaStart) / (float64(acct.workers) * float64(span))
	}
	// The mean queue wait, as the simulator's: over the attempts of the measured calls that a
	// worker started, from their arrival at the server to that start. (The queues' own total,
	// used before, counted every request they admitted, the warm-up's and those after the
	// measured calls included, under the simulator's name for the measured calls' figure.)
	var waited time.Duration
	var started int
	for i := warm; i < pc.calls; i++ {
		for k := range maxAttempts {
			arr, st := acct.arrivedAt[i*maxAttempts+k].Load(), acct.startedAt[i*maxAttempts+k].Load()
			if arr > 0 && st >= arr {
				waited += time.Duration(st - arr)
				started++
			}
		}
	}
	if started > 0 {
		pt.MeanWaitMs = float64(waited) / float64(started) / 1e6
	}
	if served > 0 {
		pt.WastedWorkPct = 100 * float64(wasted) / float64(served)
	}
}

// holdExcessP50Us is the median, over the measured calls' winning attempts, of how much
// longer the worker held the attempt than its drawn service time (times -server-scale: what
// the server meant to hold it for), in µs. It is 0 without winners.
func holdExcessP50Us(pc pointConfig, recs []callRecord, warm int, acct *accounts) float64 {
	scale := pc.serverScale
	if scale <= 0 {
		scale = 1
	}
	var ex []time.Duration
	for i := warm; i < pc.calls; i++ {
		w := int(recs[i].winner)
		if w < 0 || w >= maxAttempts {
			continue
		}
		d := time.Duration(float64(serviceTime(pc.service, pc.seed, i, w)) * scale)
		ex = append(ex, time.Duration(acct.served[i*maxAttempts+w].Load())-d)
	}
	if len(ex) == 0 {
		return 0
	}
	return pctUs(ex, 0.5)
}

// quantileMs is the q-quantile (nearest rank) of n calls, of which sorted are the successes'
// latencies and the rest failed (slower than any success), in ms.
func quantileMs(sorted []int64, n int, q float64) float64 {
	i := int(math.Ceil(q*float64(n))) - 1
	i = max(0, min(i, n-1))
	if i >= len(sorted) {
		return sim.Failed
	}
	return float64(sorted[i]) / 1e6
}

// rejected is how many requests the replicas' full queues have turned away.
func rejected(reps []*server) uint64 {
	var n uint64
	for _, rp := range reps {
		n += rp.stats().Rejected
	}
	return n
}

// queued is how many requests wait in the replicas' queues now.
func queued(reps []*server) int {
	n := 0
	for _, rp := range reps {
		n += rp.stats().Queued
	}
	return n
}

// loadClient is a point's client, whatever its protocol: call makes call i (its index in
// arrival order) and returns nil for an OK answer; close closes its connections.
type loadClient struct {
	call  func(ctx context.Context, i int) error
	close func()
}

// errStatus is an HTTP answer other than 200 OK.
var errStatus = errors.New("hedgeload: the server did not answer 200 OK")

// newLoadClient returns a client that hedges under policy over protocol to the servers at addrs
// (over HTTP, the first, or the replicas replicas names; over gRPC, all of them through
// hedgegrpc's balancer), reading each server's out-of-band load
// reports every loadInterval when it is not 0 (HTTP: hedgehttp's load stream; gRPC: ORCA's).
func newLoadClient(protocol string, policy hedge.Config, replicas func(string) []string, balancer string, addrs []string, loadInterval time.Duration) (loadClient, error) {
	if protocol == GRPC {
		return newGRPCClient(policy, addrs, loadInterval)
	}
	addr := addrs[0]
	client, closeIdle, err := newClient(protocol, policy, replicas, balancer, loadInterval)
	if err != nil {
		return loadClient{}, err
	}
	url := "http://" + addr + "/"
	return loadClient{
		call: func(ctx context.Context, i int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			req.Header.Set(callHeader, strconv.Itoa(i))
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%w: %s", errStatus, resp.Status)
			}
			return nil
		},
		close: closeIdle,
	}, nil
}

// newClient returns an HTTP client that hedges under policy through hedgehttp.Transport, over
// the given protocol, with load streams every loadInterval when it is not 0, and a function
// that closes its streams and idle connections.
func newClient(protocol string, policy hedge.Config, replicas func(string) []string, balancer string, loadInterval time.Duration) (*http.Client, func(), error) {
	var rc replica.Config
	if balancer != "" {
		b, err := replica.ParseBalancer(balancer)
		if err != nil {
			return nil, nil, err
		}
		rc.Balancer = b
	}
	base := &http.Transport{
		MaxIdleConnsPerHost: 4096, // every connection a burst opened stays for the next one
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		Protocols:           new(http.Protocols),
		HTTP2:               &http.HTTP2Config{MaxConcurrentStreams: 1 << 16},
	}
	if protocol == HTTP2 {
		base.Protocols.SetUnencryptedHTTP2(true)
	} else {
		base.Protocols.SetHTTP1(true)
	}
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{Policy: policy, Next: base, Replicas: replicas, Replica: rc, LoadReportInterval: loadInterval})
	if err != nil {
		return nil, nil, err
	}
	// Close: the streams, and the idle connections of base and of the hedges' own.
	return &http.Client{Transport: tr}, func() { tr.Close() }, nil
}
