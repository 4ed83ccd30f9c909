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
// a worker. Each stream ends when its client closes the connection or the server stops; note
// that grpc.Server.GracefulStop waits for them, as for any stream.
func (q *Queue) RegisterOOB(s grpc.ServiceRegistrar, minInterval time.Duration) error {
	if minInterval < 0 {
		return fmt.Errorf("%w: RegisterOOB's minInterval must be >= 0, got %v", ErrQueueConfig, minInterval)
	}
	if minInterval == 0 {
		minInterval = DefaultOOBMinInterval
	}
	v3orcaservicegrpc.RegisterOpenRcaServiceServer(s, &oobService{q: q, min: minInterval})
	return nil
}

// oobService is the queue's OpenRcaService.
type oobService struct {
	v3orcaservicegrpc.UnimplementedOpenRcaServiceServer
	q   *Queue
	min time.Duration
}

// StreamCoreMetrics sends the queue's load at once and then at the interval the client asked
// for (at least the service's minimum), until the client goes away.
func (s *oobService) StreamCoreMetrics(req *v3orcaservicegrpc.OrcaLoadReportRequest, stream v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsServer) error {
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
	oob    atomic.Pointer[receivedLoad]
	callAt atomic.Int64 // unix nanoseconds of the latest per-call report; 0 = none
	refs   int          // SubConns that listen for it (ccWrapper.mu)
}

// receivedLoad is a report and the moment it was received.
type receivedLoad struct {
	at   time.Time
	load hedge.Load
}

// OnLoadReport keeps the report, when it is a [Queue]'s, with the time it was received. gRPC
// calls it from the stream's goroutine.
func (b *backendLoad) OnLoadReport(r *v3orcapb.OrcaLoadReport) {
	if l, ok := loadOf(r); ok {
		b.oob.Store(&receivedLoad{at: time.Now(), load: l})
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
	if w.oob <= 0 || len(addrs) == 0 {
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
		bl = &backendLoad{addr: addr}
		w.loads[addr] = bl
	}
	bl.refs++
	sub := &oobSub{addr: addr, load: bl}
	w.subs[sub] = struct{}{}
	w.mu.Unlock()
	interval := w.oob
	var sc balancer.SubConn
	next := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		// gRPC calls the listener from the balancer's serializer, one call at a time.
		switch {
		case s.ConnectivityState == connectivity.Ready && sub.stop == nil:
			sub.stop = orca.RegisterOOBListener(sc, bl, orca.OOBListenerOptions{ReportInterval: interval})
		case s.ConnectivityState != connectivity.Ready && sub.stop != nil:
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

// loadFor returns the reports of the backend at addr, nil when none are asked for.
func (w *ccWrapper) loadFor(addr string) *backendLoad {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.loads[addr]
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
// received, to the replicas a pick chooses from and to the call's policy (nil when the call
// has none), before the pick: the same paths a per-call report takes where an attempt ends,
// but for every backend, whichever the call's attempts reached. A report older than
// [hedge.LoadMaxAge], or older than the backend's latest per-call report, is left out.
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
	oob   time.Duration // the interval to ask for; 0 = no out-of-band reports
	mu    sync.Mutex
	loads map[string]*backendLoad // by address
	subs  map[*oobSub]struct{}
}
