package hedgegrpc

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/protobuf/encoding/protowire"
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
// [Queue.UnaryServer] and [Queue.StreamServer], each of whose calls then carries the queue's
// ORCA per-call load report in its trailer, those the queue turns away (RESOURCE_EXHAUSTED)
// too. Pass them to grpc.NewServer before interceptors that run inside the queue, such as
// [StartSignal]. (This package's balancer reads the reports of calls with one response; the
// end of a stream from the server can reach its caller long before the caller reads it, and
// nothing says when.)
//
// The report is the standard one (the endpoint-load-metrics-bin trailer holding an
// xds.data.orca.v3.OrcaLoadReport), encoded by the queue itself: gRPC's orca package builds the
// same report through a per-call recorder that costs far more than the message. When that
// recorder is in the call's context all the same (orca.CallMetricsServerOption installed
// before the queue, for metrics of your own), the queue adds its figures to it instead, so the
// call carries one report; installed by hand with that option, UnaryServer and StreamServer
// report the same way. The queue's figures are set as the call ends, so they replace a value
// your code gave the same fields (application utilization, QPS, the queue's named metrics);
// your other metrics and utilizations are kept. Install that option before these, never after: after, its recorder
// runs inside the queue, which cannot see it, the call carries two reports, and ORCA readers
// (gRPC's own among them) refuse a call with two.
func (q *Queue) ServerOptions() []grpc.ServerOption {
	q.mustBeBuilt()
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(q.reportingUnary),
		grpc.ChainStreamInterceptor(q.reportingStream),
	}
}

// reportingUnary is UnaryServer with the queue's report on every call.
func (q *Queue) reportingUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if q.probe(info) {
		return handler(ctx, req) // see QueueConfig.QueueHealthCheck
	}
	wait, err := q.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	defer q.doneReporting(ctx, wait, true)
	return handler(ctx, req)
}

// reportingStream is StreamServer with the queue's report on every stream.
func (q *Queue) reportingStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if bypassesQueue(info.FullMethod) {
		return handler(srv, ss) // see StreamServer
	}
	ctx := ss.Context()
	wait, err := q.acquire(ctx, true)
	if err != nil {
		return err
	}
	defer q.doneReporting(ctx, wait, true)
	return handler(srv, ss)
}

// orcaTrailerKey is the trailer key of an ORCA per-call load report (gRFC A51).
const orcaTrailerKey = "endpoint-load-metrics-bin"

// report puts the queue's load in the call's ORCA report as the call ends: into gRPC's
// per-call recorder when one is in the context, or else, with own, in a trailer of its own.
func (q *Queue) report(ctx context.Context, wait time.Duration, own bool) {
	rec := orca.CallMetricsRecorderFromContext(ctx)
	if rec == nil && !own {
		return
	}
	l := q.core.Load(wait)
	if rec == nil {
		_ = grpc.SetTrailer(ctx, q.reports.trailer(l))
		return
	}
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

// reportCache keeps the trailers of the reports the queue sent last, so that a call whose
// report is the same as an earlier one's (a server whose load holds steady between calls, the
// common case: the rate changes once a second) sends that trailer again without encoding it
// or allocating: grpc copies the trailer it is given, so one can be shared by every call. It
// is a small table indexed by the load's figures, each slot holding the latest report that
// fell in it; a report that does not match its slot's is encoded and replaces it. A call that
// waited for its worker has a report of its own (its wait) and is not kept.
type reportCache struct {
	slots [reportSlots]atomic.Pointer[cachedReport]
}

// reportSlots is the size of a [reportCache]: room for the few loads a steady server moves
// between (a worker more or less busy, a call more or less queued).
const reportSlots = 8

// cachedReport is one [reportCache] slot: a load and the trailer that reports it.
type cachedReport struct {
	load workqueue.Load
	md   metadata.MD
}

// trailer returns the trailer that carries l's report, from the cache when it has it.
func (c *reportCache) trailer(l workqueue.Load) metadata.MD {
	if l.Wait != 0 {
		return encodeTrailer(l)
	}
	slot := &c.slots[uint(l.Busy*3+l.Queued)%reportSlots]
	if r := slot.Load(); r != nil && r.load == l {
		return r.md
	}
	md := encodeTrailer(l)
	slot.Store(&cachedReport{load: l, md: md})
	return md
}

// encodeTrailer returns a new trailer carrying l's report.
func encodeTrailer(l workqueue.Load) metadata.MD {
	var buf [reportSize]byte
	return metadata.MD{orcaTrailerKey: []string{string(appendReport(buf[:0], l))}}
}

// The field numbers of xds.data.orca.v3.OrcaLoadReport that the queue fills, and of a map
// entry (key 1, value 2).
const (
	orcaUtilization            protowire.Number = 5
	orcaRPSFractional          protowire.Number = 6
	orcaNamedMetrics           protowire.Number = 8
	orcaApplicationUtilization protowire.Number = 9
)

// reportSize is room for the whole encoded report: six map entries of up to 30 bytes and two
// doubles of 9.
const reportSize = 200

// appendReport appends l as an encoded OrcaLoadReport, the fields that would be zero left out
// as proto3 does.
func appendReport(b []byte, l workqueue.Load) []byte {
	b = appendEntry(b, orcaNamedMetrics, MetricQueued, float64(l.Queued))
	b = appendEntry(b, orcaNamedMetrics, MetricBusy, float64(l.Busy))
	b = appendEntry(b, orcaNamedMetrics, MetricWorkers, float64(l.Workers))
	b = appendEntry(b, orcaNamedMetrics, MetricWaitMs, float64(l.Wait)/float64(time.Millisecond))
	if l.Workers > 0 {
		b = appendEntry(b, orcaUtilization, MetricWorkersBusy, min(float64(l.Busy)/float64(l.Workers), 1))
	}
	if u := l.Utilization(); u > 0 {
		b = protowire.AppendTag(b, orcaApplicationUtilization, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(u))
	}
	if l.QPS > 0 {
		b = protowire.AppendTag(b, orcaRPSFractional, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(l.QPS))
	}
	return b
}

// appendEntry appends one entry of the map<string, double> field num. A zero value is left
// out of the entry, as protobuf's map encoding allows (a parser reads the key with the value's
// default): the trailer is shorter by nine bytes for each figure that is zero, and grpc
// handles a binary trailer by the byte (base64 and HPACK both ways).
func appendEntry(b []byte, num protowire.Number, key string, v float64) []byte {
	n := 1 + protowire.SizeBytes(len(key))
	if v != 0 {
		n += 1 + 8
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, key)
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// loadOf reads a [Queue]'s figures from an ORCA load report (balancer.DoneInfo.ServerLoad),
// and false when it is not one, carries none of them, or one of them is not a number (NaN) or
// is negative: a report that cannot be read is no report, not an idle server. (A negative
// figure read as 0 made its replica's queue the shortest of all, and every copy went there;
// hedgehttp.ParseLoad refuses one too.) One above maxFigure (a wait above maxWaitMs) reads as
// that bound.
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
	b, w, ms := m[MetricBusy], m[MetricWorkers], m[MetricWaitMs]
	if !(q >= 0 && b >= 0 && w >= 0 && ms >= 0) { // NaN too
		return hedge.Load{}, false
	}
	return hedge.Load{
		Queued:  int(min(q, maxFigure)),
		Busy:    int(min(b, maxFigure)),
		Workers: int(min(w, maxFigure)),
		Wait:    time.Duration(math.Round(min(ms, maxWaitMs) * float64(time.Millisecond))), // rounded: 1.001 ms is a shade under 1,001,000 ns in float64
	}, true
}

// maxFigure and maxWaitMs bound what loadOf reads, so that no float converts out of range
// (which Go leaves to the machine: on amd64 a huge queue would read as a negative one, then
// as idle). They are far beyond any queue's figures, and the core clamps counts further.
const (
	maxFigure = math.MaxInt32 // an int on every platform: 1 << 31 would overflow a 32-bit one
	maxWaitMs = 1e9
)

// noteLoad hands an attempt's load report to the core: to the replicas the balancer picks
// from (where a copy goes) and to the call's policy, when the call has one (the backlog
// gate). It runs in the picker's Done callback, where an attempt ends, and takes that moment
// for the report's: the Done of a call with one response (unary or client-streaming) follows
// its trailer at once. That of a call whose server streams does not: it runs when the caller
// reads the stream's end or gives the stream up, which may be long after the trailer came,
// and a report stamped then would count as fresh for LoadMaxAge after it had gone stale. The
// picker leaves those calls' per-call reports out; out-of-band reports (RegisterOOB) tell a
// client of such streams how loaded its servers are.
// bl, when not nil, is the backend's out-of-band reports (oob.go), which this newer one
// makes stale. i is the backend's replica in set, pi its number on the policy's load board,
// which the picker in use decides (picker.current); -1 leaves the policy out.
func noteLoad(ctx context.Context, set interface {
	ReportLoad(time.Time, int, replica.Load)
}, i, pi int, bl *backendLoad, sl any) {
	l, ok := loadOf(sl)
	if !ok {
		return
	}
	now := time.Now()
	if bl != nil {
		bl.callAt.Store(now.UnixNano())
	}
	set.ReportLoad(now, i, replica.Load{Queued: l.Queued, Busy: l.Busy, Workers: l.Workers, Wait: l.Wait})
	if r, _ := ctx.Value(routeKey{}).(*route); r != nil && r.policy != nil && pi >= 0 {
		r.policy.ReportLoad(now, pi, l)
	}
}
