package hedgegrpc

import (
	"context"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/orca"
)

// The names of the figures a [Queue] reports in each call's ORCA load report (gRFC A51), the
// ecosystem's standard for per-call backend metrics, so that any ORCA-aware client or
// balancer can read them as well as this package's. Beside them the report carries
// application_utilization, the demand on the workers as a fraction of their number ((busy +
// queued) / workers, above 1 while calls wait), and rps_fractional, the calls admitted per
// second: the two figures gRPC's weighted_round_robin balancer (gRFC A58) weighs backends by.
const (
	// MetricQueued (named metric): calls waiting for a worker when the call ended.
	MetricQueued = "hedge.queued"
	// MetricBusy (named metric): workers running a call, this one among them.
	MetricBusy = "hedge.busy"
	// MetricWorkers (named metric): the queue's workers.
	MetricWorkers = "hedge.workers"
	// MetricWaitMs (named metric): how long this call waited for its worker, in ms.
	MetricWaitMs = "hedge.wait_ms"
	// MetricWorkersBusy (named utilization, in [0, 1]): busy / workers.
	MetricWorkersBusy = "hedge.workers_busy"
)

// ServerOptions returns the server options that install the queue with its load reports:
// ORCA's per-call metrics (orca.CallMetricsServerOption, outermost, so that it sends the
// report after the queue has filled it in) and [Queue.UnaryServer] and [Queue.StreamServer].
// Pass them to grpc.NewServer before interceptors that run inside the queue, such as
// [StartSignal]. Installed by hand instead, the queue reports whenever an ORCA recorder is in
// the call's context (orca.CallMetricsServerOption placed before it).
func (q *Queue) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		orca.CallMetricsServerOption(nil),
		grpc.ChainUnaryInterceptor(q.UnaryServer),
		grpc.ChainStreamInterceptor(q.StreamServer),
	}
}

// report fills the call's ORCA report with the queue's load as the call ends, when ORCA
// per-call metrics are enabled on the server.
func (q *Queue) report(ctx context.Context, wait time.Duration) {
	rec := orca.CallMetricsRecorderFromContext(ctx)
	if rec == nil {
		return
	}
	l := q.core.Load(wait)
	rec.SetNamedMetric(MetricQueued, float64(l.Queued))
	rec.SetNamedMetric(MetricBusy, float64(l.Busy))
	rec.SetNamedMetric(MetricWorkers, float64(l.Workers))
	rec.SetNamedMetric(MetricWaitMs, float64(l.Wait)/float64(time.Millisecond))
	if l.Workers > 0 {
		rec.SetNamedUtilization(MetricWorkersBusy, min(float64(l.Busy)/float64(l.Workers), 1))
	}
	if u := l.Utilization(); u > 0 {
		rec.SetApplicationUtilization(u)
	}
	if l.QPS > 0 {
		rec.SetQPS(l.QPS)
	}
}

// loadOf reads a [Queue]'s figures from an ORCA load report (balancer.DoneInfo.ServerLoad),
// and false when it is not one or carries none of them.
func loadOf(sl any) (hedge.Load, bool) {
	r, ok := sl.(*v3orcapb.OrcaLoadReport)
	if !ok || r == nil {
		return hedge.Load{}, false
	}
	m := r.GetNamedMetrics()
	q, ok := m[MetricQueued]
	if !ok {
		return hedge.Load{}, false
	}
	return hedge.Load{
		Queued:  int(max(q, 0)),
		Busy:    int(max(m[MetricBusy], 0)),
		Workers: int(max(m[MetricWorkers], 0)),
		Wait:    time.Duration(max(m[MetricWaitMs], 0) * float64(time.Millisecond)),
	}, true
}

// noteLoad hands an attempt's load report to the core: to the replicas the balancer picks
// from (where a copy goes) and to the call's policy, when the call has one (the backlog
// gate). It runs in the picker's Done callback, where an attempt ends.
func noteLoad(ctx context.Context, set interface {
	ReportLoad(time.Time, int, int, int)
}, i int, sl any) {
	l, ok := loadOf(sl)
	if !ok {
		return
	}
	now := time.Now()
	set.ReportLoad(now, i, l.Queued, l.Workers)
	if r, _ := ctx.Value(routeKey{}).(*route); r != nil && r.policy != nil {
		r.policy.ReportLoad(now, i, l)
	}
}
