package hedgegrpc

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

// This file holds ORCA out-of-band load reporting (gRFC A51's second half): instead of a
// report in every call's trailer, each client connection opens one stream to the server's
// OpenRcaService, on which the server sends its load at a fixed interval whatever the call
// rate. The server half is [Queue.RegisterOOB]; the client half is the hedging balancer,
// which opens the stream on each backend when [Config.LoadReportInterval] (or its service
// config's oobReportInterval) asks for it.

// DefaultOOBMinInterval is the shortest reporting interval a [Queue.RegisterOOB] service
// grants when it is given none: a client that asks for less (or for nothing) is sent a report
// this often. It is well inside [hedge.LoadMaxAge], so that a report is always fresh where the
// policy looks.
const DefaultOOBMinInterval = 50 * time.Millisecond

// longestOOBInterval is the longest interval the hedging balancer asks a backend's
// out-of-band reports for: two thirds of hedge.LoadMaxAge. A report older than LoadMaxAge
// counts for nothing, so at a longer interval most decisions would find none; with a third of
// it to spare, the next report arrives while the last still counts, whatever the network and
// the timers add (hedgehttp's load stream grants no longer interval either).
const longestOOBInterval = hedge.LoadMaxAge * 2 / 3

// oobMethod is the full name of the ORCA out-of-band stream, which the queue never holds a
// worker for.
const oobMethod = "/xds.service.orca.v3.OpenRcaService/StreamCoreMetrics"

// RegisterOOB registers on s the standard ORCA out-of-band service
// (xds.service.orca.v3.OpenRcaService), which streams the queue's load (the figures of the
// per-call report, see [MetricQueued], without a call's wait) to every client that asks, as
// often as it asks but never more often than every minInterval. 0 means
// [DefaultOOBMinInterval]; negative is an error.
//
// gRPC's own orca.Register serves the same protocol but never reports more often than every
// 30 seconds (its MinReportingInterval cannot go lower outside gRPC's tests), a hundred times
// too slow for reports that count for [hedge.LoadMaxAge]; this service is the queue's own, so
// that its minimum can be the tens of milliseconds a queue's state lasts.
//
// Out-of-band reports cost a server one small message per connection per interval, whatever
// the call rate, and nothing per call: use them, instead of or beside [Queue.ServerOptions],
// where calls are many and small. The queue's interceptors let the stream pass without taking
// a worker. Each stream ends when its client closes the connection, the server stops, or
// [Queue.StopOOB] ends it: call that before grpc.Server.GracefulStop, which waits for every
// stream, and so for as long as a client other than the hedging balancer keeps its report
// stream open.
func (q *Queue) RegisterOOB(s grpc.ServiceRegistrar, minInterval time.Duration) error {
	if q == nil || q.core == nil {
		return fmt.Errorf("%w: RegisterOOB on a Queue not built by NewQueue", ErrQueueConfig)
	}
	if minInterval < 0 {
		return fmt.Errorf("%w: RegisterOOB's minInterval must be >= 0, got %v", ErrQueueConfig, minInterval)
	}
	if minInterval == 0 {
		minInterval = DefaultOOBMinInterval
	}
	v3orcaservicegrpc.RegisterOpenRcaServiceServer(s, &oobService{q: q, min: minInterval})
	return nil
}

// oobStop is how StopOOB ends the queue's out-of-band streams: stop is closed once, and a
// stream opened after is refused. The zero value is ready.
type oobStop struct {
	mu      sync.Mutex
	stopped bool
	stop    chan struct{} // made by the first stream or StopOOB, closed by StopOOB
}

// errOOBStopped ends a report stream that StopOOB ended, or refuses one opened after it.
var errOOBStopped = status.Error(codes.Unavailable, "hedgegrpc: the queue's out-of-band load reports have stopped")

// channel returns the channel StopOOB closes, and false once it has.
func (o *oobStop) channel() (<-chan struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return nil, false
	}
	if o.stop == nil {
		o.stop = make(chan struct{})
	}
	return o.stop, true
}

// StopOOB ends every out-of-band load report stream of the queue's [Queue.RegisterOOB]
// services, each with codes.Unavailable once any report it is sending has gone, and refuses
// the streams opened after it the same way. Call it as the server shuts down, before
// grpc.Server.GracefulStop: GracefulStop waits for every stream to end, and a client that
// is not the hedging balancer (which lets go of its stream as the server's GOAWAY arrives),
// a plain ORCA client for instance, keeps its report stream for as long as its connection
// lasts. A client's hedging goes on without the reports (they age out, and the policy infers
// the queue from latencies again). Calling it again does nothing.
//
// It is for good and for the whole queue: the streams of every server RegisterOOB registered
// it on end, and a server built again on the same Queue serves none; build a new Queue with
// the new server. A stream's send that its client's flow control holds (a client that stopped
// reading, some thirty seconds of reports behind) sees the stop only when that send returns,
// which may be only when the connection closes: bound GracefulStop with Stop after a timeout.
func (q *Queue) StopOOB() {
	q.mustBeBuilt()
	o := &q.oob
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	o.stopped = true
	if o.stop != nil {
		close(o.stop)
	}
}

// oobService is the queue's OpenRcaService.
type oobService struct {
	v3orcaservicegrpc.UnimplementedOpenRcaServiceServer
	q   *Queue
	min time.Duration
}

// StreamCoreMetrics sends the queue's load at once and then at the interval the client asked
// for (at least the service's minimum), until the client goes away or StopOOB ends it.
func (s *oobService) StreamCoreMetrics(req *v3orcaservicegrpc.OrcaLoadReportRequest, stream v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsServer) error {
	stop, ok := s.q.oob.channel()
	if !ok {
		return errOOBStopped
	}
	interval := s.min
	if d := req.GetReportInterval(); d != nil && d.AsDuration() > interval {
		interval = d.AsDuration()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	ctx := stream.Context()
	for {
		if err := stream.Send(oobReport(s.q.core.Load(0))); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-stop:
			return errOOBStopped
		case <-t.C:
		}
	}
}

// oobReport is l as an OrcaLoadReport message, with the figures of the per-call report
// (appendReport).
func oobReport(l workqueue.Load) *v3orcapb.OrcaLoadReport {
	r := &v3orcapb.OrcaLoadReport{
		NamedMetrics: map[string]float64{
			MetricQueued:  float64(l.Queued),
			MetricBusy:    float64(l.Busy),
			MetricWorkers: float64(l.Workers),
			MetricWaitMs:  0,
		},
		ApplicationUtilization: l.Utilization(),
		RpsFractional:          l.QPS,
	}
	if l.Workers > 0 {
		r.Utilization = map[string]float64{MetricWorkersBusy: min(float64(l.Busy)/float64(l.Workers), 1)}
	}
	return r
}

// lbConfig is the hedging balancer's configuration:
// {"hedge_round_robin":{"oobReportInterval":"0.05s"}}. oobReportInterval, when present and
// not zero, opens an ORCA out-of-band stream on every backend, asking for a report that often
// (see [Config.LoadReportInterval]); absent or "0s", none is opened.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig
	oob time.Duration
}

// ParseConfig reads the balancer's configuration from a service config.
func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c struct {
		OOBReportInterval *string `json:"oobReportInterval"`
	}
	if len(js) > 0 {
		if err := json.Unmarshal(js, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", BalancerName, err)
		}
	}
	cfg := &lbConfig{}
	if c.OOBReportInterval != nil {
		d, err := protoDuration(BalancerName+".oobReportInterval", *c.OOBReportInterval)
		if err != nil {
			return nil, err
		}
		cfg.oob = d
	}
	return cfg, nil
}

// serviceConfigFor is the default service config that selects the balancer with
// out-of-band reports every d (none when d is 0).
func serviceConfigFor(d time.Duration) string {
	if d <= 0 {
		return ServiceConfig
	}
	return fmt.Sprintf(`{"loadBalancingConfig":[{"%s":{"oobReportInterval":"%.9fs"}}]}`, BalancerName, d.Seconds())
}

// backendLoad is what the balancer knows of one backend's load from its out-of-band reports
// (an orca.OOBListener): the latest report and when it came, and when the latest per-call
// report came, which, when newer, makes the out-of-band one stale.
type backendLoad struct {
	addr   string
	state  *oobState // the balancer's, which hands each report on as it arrives (deliver)
	oob    atomic.Pointer[receivedLoad]
	callAt atomic.Int64 // unix nanoseconds of the latest per-call report; 0 = none
	refs   int          // SubConns that listen for it (ccWrapper.mu)
	ready  int          // of which READY (ccWrapper.mu)
}

// receivedLoad is a report and the moment it was received.
type receivedLoad struct {
	at   time.Time
	load hedge.Load
}

// OnLoadReport keeps the report, when it is a [Queue]'s, with the time it was received, and
// hands it on at once (oobState.deliver). gRPC calls it from the stream's goroutine.
func (b *backendLoad) OnLoadReport(r *v3orcapb.OrcaLoadReport) {
	if l, ok := loadOf(r); ok {
		rl := &receivedLoad{at: time.Now(), load: l}
		b.oob.Store(rl)
		if b.state != nil {
			b.state.deliver(b, rl)
		}
		if h := oobReceived.Load(); h != nil {
			(*h)(b.addr, l)
		}
	}
}

// oobReceived, when set (by tests), is called after each out-of-band report is kept.
var oobReceived atomic.Pointer[func(addr string, l hedge.Load)]

// oobSub is one SubConn's out-of-band listener.
type oobSub struct {
	addr string
	load *backendLoad
	stop func() // nil while not READY
}

// NewSubConn creates the SubConns of the pick_first children; with out-of-band reports on,
// each one listens for its backend's reports while it is READY.
func (w *ccWrapper) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	if w.oobInterval.Load() <= 0 || len(addrs) == 0 {
		return w.ClientConn.NewSubConn(addrs, opts)
	}
	w.mu.Lock()
	if w.loads == nil {
		w.loads = make(map[string]*backendLoad)
		w.subs = make(map[*oobSub]struct{})
	}
	addr := addrs[0].Addr
	bl := w.loads[addr]
	if bl == nil {
		bl = &backendLoad{addr: addr, state: &w.oobState}
		w.loads[addr] = bl
	}
	bl.refs++
	sub := &oobSub{addr: addr, load: bl}
	w.subs[sub] = struct{}{}
	w.mu.Unlock()
	interval := min(time.Duration(w.oobInterval.Load()), longestOOBInterval)
	var sc balancer.SubConn
	next := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		// gRPC calls the listener from the balancer's serializer, one call at a time.
		switch {
		case s.ConnectivityState == connectivity.Ready && sub.stop == nil:
			w.mu.Lock()
			bl.ready++
			w.mu.Unlock()
			sub.stop = orca.RegisterOOBListener(sc, bl, orca.OOBListenerOptions{ReportInterval: interval})
		case s.ConnectivityState != connectivity.Ready && sub.stop != nil:
			w.mu.Lock()
			bl.ready--
			w.mu.Unlock()
			sub.stop()
			sub.stop = nil
		}
		if s.ConnectivityState == connectivity.Shutdown {
			w.forget(sub)
		}
		if next != nil {
			next(s)
		}
	}
	sc, err := w.ClientConn.NewSubConn(addrs, opts)
	if err != nil {
		w.forget(sub)
	}
	return sc, err
}

// forget drops a SubConn that is gone, and its backend's reports when no SubConn is left.
func (w *ccWrapper) forget(sub *oobSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.subs[sub]; !ok {
		return
	}
	delete(w.subs, sub)
	if sub.load.refs--; sub.load.refs == 0 && w.loads[sub.addr] == sub.load {
		delete(w.loads, sub.addr)
	}
}

// loadFor returns the reports of the endpoint's backend: those of the address pick_first is
// connected to, else the first address's; nil when none are asked for.
func (w *ccWrapper) loadFor(addrs []resolver.Address) *backendLoad {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range addrs {
		if bl := w.loads[a.Addr]; bl != nil && bl.ready > 0 {
			return bl
		}
	}
	return w.loads[addrs[0].Addr]
}

// stopOOB stops every listener, as the balancer closes.
func (w *ccWrapper) stopOOB() {
	w.mu.Lock()
	subs := make([]*oobSub, 0, len(w.subs))
	for s := range w.subs {
		subs = append(subs, s)
	}
	w.mu.Unlock()
	for _, s := range subs {
		if s.stop != nil {
			s.stop()
			s.stop = nil
		}
	}
}

// feedOOB hands the balancer's latest out-of-band reports, each with the time it was
// received, to set (the picker's replicas) and to policy (nil: none): what deliver would have
// handed them so far, for a picker just installed or a policy seen for the first time (or
// not watched). A report older than [hedge.LoadMaxAge], or older than the backend's latest
// per-call report, is left out.
func (p *picker) feedOOB(now time.Time, set *replica.Set, policy *hedge.Policy) {
	for j := range p.ready {
		bl := p.ready[j].load
		if bl == nil {
			continue
		}
		r := bl.oob.Load()
		if r == nil || now.Sub(r.at) >= hedge.LoadMaxAge || r.at.UnixNano() <= bl.callAt.Load() {
			continue
		}
		set.ReportLoad(r.at, j, replica.Load{Queued: r.load.Queued, Busy: r.load.Busy, Workers: r.load.Workers})
		if policy != nil {
			policy.ReportLoad(r.at, j, r.load)
		}
	}
}

// oobState is the part of ccWrapper that out-of-band reports need.
type oobState struct {
	oobInterval atomic.Int64 // the interval to ask for, ns; 0 = no out-of-band reports. Atomic: NewSubConn also runs off the serializer (endpointsharding's ExitIdle goroutine)
	mu          sync.Mutex
	loads       map[string]*backendLoad // by address
	subs        map[*oobSub]struct{}

	// Where a report goes as it arrives (deliver): the replicas of the picker in use, and
	// the policy of every call picked lately (watch), up to maxWatched of them.
	cur      atomic.Pointer[picker] // nil while no backend is READY
	watchMu  sync.Mutex
	policies atomic.Pointer[[]*watched] // copied on write, under watchMu
}

// watched is a policy the balancer hands reports to as they arrive, and when a pick last
// found it (unix nanoseconds, brought up to date at most once per watchTick).
type watched struct {
	policy *hedge.Policy
	seen   atomic.Int64
}

// maxWatched bounds the policies a balancer hands reports to as they arrive: a client has
// one policy per method (or per key of its PolicyFor), a bounded set. Past it, as when many
// clients share one connection one after another, a call's policy is fed at its picks
// (feedOOB) instead.
const maxWatched = 64

// watchIdle is how long a watched policy goes without a pick before reports stop going to
// it and it gives up its place: the policy a Reconfigure replaced never picks again. A policy
// that picks after so long is fed the latest reports at that pick, as when first seen. It is
// the minute after which hedgehttp closes an unused host's load streams.
const watchIdle = time.Minute

// watchTick is how often a pick brings its policy's watched.seen up to date, so that most
// picks only read it.
const watchTick = time.Second

// install makes p the picker whose replicas receive reports as they arrive, and hands them
// the latest reports (a new picker may come with a new replica set). p is nil while no
// backend is READY.
func (s *oobState) install(p *picker) {
	if p != nil {
		p.state = s
		if p.oob {
			p.feedOOB(time.Now(), p.pool.Set(), nil)
		}
	}
	s.cur.Store(p)
}

// watch makes sure that policy receives every backend's reports as they arrive; the first
// time (or the first after watchIdle without a pick), it hands policy the latest ones (what
// it would have been fed at this pick). It drops the policies idle for watchIdle, and reports
// false when the balancer still watches maxWatched others: feed policy at the pick instead.
func (s *oobState) watch(now time.Time, p *picker, policy *hedge.Policy) bool {
	t := now.UnixNano()
	if ws := s.policies.Load(); ws != nil {
		for _, w := range *ws {
			if w.policy != policy {
				continue
			}
			if seen := w.seen.Load(); t-seen >= int64(watchTick) {
				w.seen.Store(t)
				if t-seen >= int64(watchIdle) {
					p.feedOOB(now, p.pool.Set(), policy) // reports skipped it meanwhile
				}
			}
			return true
		}
	}
	s.watchMu.Lock()
	var old []*watched
	if ws := s.policies.Load(); ws != nil {
		old = *ws
	}
	kept := make([]*watched, 0, len(old)+1)
	for _, w := range old {
		if w.policy == policy { // added meanwhile, and fed
			s.watchMu.Unlock()
			return true
		}
		if t-w.seen.Load() < int64(watchIdle) {
			kept = append(kept, w)
		}
	}
	ok := len(kept) < maxWatched
	if ok {
		w := &watched{policy: policy}
		w.seen.Store(t)
		kept = append(kept, w)
	}
	s.policies.Store(&kept)
	s.watchMu.Unlock()
	if ok {
		p.feedOOB(now, p.pool.Set(), policy)
	}
	return ok
}

// deliver hands b's report rl, as it arrives, to the replica set of the picker in use and
// to every watched policy: the paths a per-call report takes where an attempt ends, as
// hedgehttp's load streams do. Fed only at picks, a policy would read a report as old as its
// client's last pick: for a client with a thin slice of the calls, a threshold or more at the
// moment the backlog gate decides a call's hedge.
func (s *oobState) deliver(b *backendLoad, rl *receivedLoad) {
	p := s.cur.Load()
	if p == nil {
		return
	}
	j := -1
	for i := range p.ready {
		if p.ready[i].load == b {
			j = i
			break
		}
	}
	if j < 0 {
		return // not one of the picker's backends
	}
	p.pool.Set().ReportLoad(rl.at, j, replica.Load{Queued: rl.load.Queued, Busy: rl.load.Busy, Workers: rl.load.Workers})
	if ws := s.policies.Load(); ws != nil {
		t := rl.at.UnixNano()
		for _, w := range *ws {
			if t-w.seen.Load() < int64(watchIdle) {
				w.policy.ReportLoad(rl.at, j, rl.load)
			}
		}
	}
}
