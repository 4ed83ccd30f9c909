package hedgegrpc

import (
	"context"
	"math"
	"net"
	"reflect"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/workqueue"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // registers weighted_round_robin
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/protobuf/proto"
)

// orcaTrailer is the trailer key of an ORCA per-call load report (gRFC A51).
const orcaTrailer = "endpoint-load-metrics-bin"

func answerAtOnce() *backend {
	return &backend{check: func(context.Context, *backend, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return serving(), nil
	}}
}

// TestQueueORCAReport reads the queue's report as any client can: the standard trailer,
// decoded with the standard message.
func TestQueueORCAReport(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 4, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	be := answerAtOnce()
	lis := listen(t)
	srv := grpc.NewServer(q.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, be)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := healthpb.NewHealthClient(cc)
	var r v3orcapb.OrcaLoadReport
	// The first report has no rate, and the first estimate comes 100 ms on (workqueue's
	// earlyEvery): calls until one carries it.
	calls := 0
	if !waitFor(5*time.Second, func() bool {
		var trailer metadata.MD
		if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
			t.Fatal(err)
		}
		calls++
		v := trailer.Get(orcaTrailer)
		if len(v) != 1 {
			t.Fatalf("call %d: trailer %v has no ORCA report", calls, trailer)
		}
		if err := proto.Unmarshal([]byte(v[0]), &r); err != nil {
			t.Fatal(err)
		}
		return calls >= 2 && r.GetRpsFractional() > 0
	}) {
		t.Fatalf("no report with a rate in %d calls over 5s", calls)
	}
	m := r.GetNamedMetrics()
	if m[MetricQueued] != 0 || m[MetricBusy] != 1 || m[MetricWorkers] != 4 {
		t.Fatalf("named metrics %v, want 0 queued, 1 of 4 busy", m)
	}
	if _, ok := m[MetricWaitMs]; !ok {
		t.Fatalf("named metrics %v: no %s", m, MetricWaitMs)
	}
	if u := r.GetUtilization()[MetricWorkersBusy]; u != 0.25 {
		t.Fatalf("utilization %v, want %s 0.25", r.GetUtilization(), MetricWorkersBusy)
	}
	if r.GetApplicationUtilization() != 0.25 || r.GetRpsFractional() <= 0 {
		t.Fatalf("application utilization %v, rps %v; want 0.25 and a rate", r.GetApplicationUtilization(), r.GetRpsFractional())
	}
	l, ok := loadOf(&r)
	if !ok || l.Queued != 0 || l.Busy != 1 || l.Workers != 4 {
		t.Fatalf("loadOf = %+v, %v", l, ok)
	}
}

// TestLoadOfOddFigures: a report whose figures are not numbers, or are negative, is no report
// (it must not read as an idle server); figures too large for an int (or infinite)
// as the largest loadOf keeps, never as the negative number a float converted out of range
// gives on some machines.
func TestLoadOfOddFigures(t *testing.T) {
	report := func(q, b, w, ms float64) *v3orcapb.OrcaLoadReport {
		return &v3orcapb.OrcaLoadReport{NamedMetrics: map[string]float64{
			MetricQueued: q, MetricBusy: b, MetricWorkers: w, MetricWaitMs: ms,
		}}
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, r := range []*v3orcapb.OrcaLoadReport{report(nan, 1, 4, 0), report(0, nan, 4, 0), report(0, 1, nan, 0), report(0, 1, 4, nan),
		report(-3, -1, 4, -2), report(-1, 1, 4, 0), report(0, -1, 4, 0), report(0, 1, -4, 0), report(0, 1, 4, -2), report(math.Inf(-1), 1, 4, 0)} {
		if l, ok := loadOf(r); ok {
			t.Errorf("loadOf(%v) = %+v, true; want no report", r.GetNamedMetrics(), l)
		}
	}
	for _, tc := range []struct {
		r    *v3orcapb.OrcaLoadReport
		want hedge.Load
	}{
		{report(math.Copysign(0, -1), 0, 4, 0), hedge.Load{Workers: 4}}, // -0 is 0
		{report(1e30, inf, 4, inf), hedge.Load{Queued: maxFigure, Busy: maxFigure, Workers: 4, Wait: maxWaitMs * time.Millisecond}},
		{report(inf, 2, 1e300, 1e300), hedge.Load{Queued: maxFigure, Busy: 2, Workers: maxFigure, Wait: maxWaitMs * time.Millisecond}},
	} {
		if l, ok := loadOf(tc.r); !ok || l != tc.want {
			t.Errorf("loadOf(%v) = %+v, %v; want %+v, true", tc.r.GetNamedMetrics(), l, ok, tc.want)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// TestWeightedRoundRobinReadsQueueReports runs a plain grpc-go client with gRPC's own
// weighted_round_robin balancer (gRFC A58) against two real servers behind our queues: one
// with a single worker, one with eight. Each call keeps one worker busy, so the reports say
// the first runs at 8 times the utilisation of the second, and the balancer, reading them,
// sends the second most of the traffic; without them it would round-robin, half and half.
// The balancer recomputes its weights on its own real-time ticker (every 100ms here), so the
// test makes calls, bounded in number and time, until the share has moved.
func TestWeightedRoundRobinReadsQueueReports(t *testing.T) {
	checkLeaks(t)
	bs := startBackends(t, 2, func(int) *backend { return answerAtOnce() })
	for i, b := range bs {
		// startBackends serves without the queue: serve again, behind one.
		q, err := NewQueue(QueueConfig{Workers: []int{1, 8}[i], QueueHealthCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		lis := listen(t)
		srv := grpc.NewServer(q.ServerOptions()...)
		healthpb.RegisterHealthServer(srv, b)
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		b.addr = lis.Addr().String()
	}
	const sc = `{"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0s","weightUpdatePeriod":"0.1s"}}]}`
	wrrShiftsToSecond(t, "wrrtest", sc, bs, "eight-worker")
}

// TestInterceptorReadsORCA checks that the hedging balancer hands each call's ORCA report to
// the core: to the call's policy and to the replica it came from.
func TestInterceptorReadsORCA(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 5, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	bs := startBackends(t, 1, func(int) *backend { return answerAtOnce() }, q.ServerOptions()...)
	hi := newInterceptor(t, Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}})
	cc := dial(t, hi, bs)
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	p := hi.Policy(checkMethod)
	if q, w, ok := p.ServerQueue(time.Now()); !ok || q != 0 || w != 5 {
		t.Fatalf("ServerQueue = %d, %d, %v; want the report (0 queued of 5 workers)", q, w, ok)
	}
}

// TestQueueJoinsORCARecorder: with gRPC's own per-call recorder installed before the queue
// (for metrics of the application's own), the queue adds its figures to that report, and the
// call carries one report with both.
func TestQueueJoinsORCARecorder(t *testing.T) {
	checkLeaks(t)
	q, err := NewQueue(QueueConfig{Workers: 2, QueueHealthCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	be := &backend{check: func(ctx context.Context, _ *backend, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		orca.CallMetricsRecorderFromContext(ctx).SetNamedMetric("app.rows", 7)
		return serving(), nil
	}}
	hi := newInterceptor(t, Config{})
	cc := startBufconn(t, hi, be, orca.CallMetricsServerOption(nil), grpc.ChainUnaryInterceptor(q.UnaryServer))
	var trailer metadata.MD
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	v := trailer.Get(orcaTrailer)
	if len(v) != 1 {
		t.Fatalf("%d ORCA reports in the trailer, want 1", len(v))
	}
	var r v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal([]byte(v[0]), &r); err != nil {
		t.Fatal(err)
	}
	if m := r.GetNamedMetrics(); m["app.rows"] != 7 || m[MetricWorkers] != 2 || m[MetricBusy] != 1 {
		t.Fatalf("named metrics %v, want the application's and the queue's", m)
	}

	// Without a recorder, UnaryServer installed by hand sends no report: only ServerOptions does.
	q2, _ := NewQueue(QueueConfig{Workers: 2, QueueHealthCheck: true})
	cc2 := startBufconn(t, hi, answerAtOnce(), grpc.ChainUnaryInterceptor(q2.UnaryServer))
	trailer = nil
	if _, err := healthpb.NewHealthClient(cc2).Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	if v := trailer.Get(orcaTrailer); len(v) != 0 {
		t.Fatalf("UnaryServer without a recorder sent a report: %v", v)
	}
}

// TestReportEncoding decodes the queue's own encoding with the standard message, as
// balancer.DoneInfo.ServerLoad and every ORCA-aware client do, for loads with and without
// zero figures (left out of their map entries, read back as zero), and checks that the report
// cache hands back the trailer of an equal load and a fresh one for any other.
func TestReportEncoding(t *testing.T) {
	loads := []workqueue.Load{
		{},
		{Workers: 4},
		{Busy: 1, Workers: 4, QPS: 1234.5},
		{Queued: 3, Busy: 4, Workers: 4, Wait: 2500 * time.Microsecond, QPS: 80},
		{Queued: 0, Busy: 0, Workers: 64, Wait: time.Nanosecond},
	}
	var c reportCache
	for _, l := range loads {
		md := c.trailer(l)
		v := md.Get(orcaTrailer)
		if len(v) != 1 {
			t.Fatalf("%+v: trailer %v", l, md)
		}
		var r v3orcapb.OrcaLoadReport
		if err := proto.Unmarshal([]byte(v[0]), &r); err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		want := &v3orcapb.OrcaLoadReport{
			NamedMetrics: map[string]float64{
				MetricQueued:  float64(l.Queued),
				MetricBusy:    float64(l.Busy),
				MetricWorkers: float64(l.Workers),
				MetricWaitMs:  float64(l.Wait) / float64(time.Millisecond),
			},
			ApplicationUtilization: l.Utilization(),
			RpsFractional:          l.QPS,
		}
		if l.Workers > 0 {
			want.Utilization = map[string]float64{MetricWorkersBusy: float64(l.Busy) / float64(l.Workers)}
		}
		if !proto.Equal(&r, want) {
			t.Fatalf("%+v: decoded %v, want %v", l, &r, want)
		}
		got, ok := loadOf(&r)
		if !ok || got.Queued != l.Queued || got.Busy != l.Busy || got.Workers != l.Workers || got.Wait != l.Wait {
			t.Fatalf("loadOf = %+v, %v; want %+v", got, ok, l)
		}
		again := c.trailer(l)
		if again.Get(orcaTrailer)[0] != v[0] {
			t.Fatalf("%+v: a second trailer reports something else", l)
		}
		if shared := reflect.ValueOf(again).UnsafePointer() == reflect.ValueOf(md).UnsafePointer(); shared != (l.Wait == 0) {
			t.Fatalf("%+v: trailer shared with the previous call = %v, want %v (only a call that did not wait shares)", l, shared, l.Wait == 0)
		}
	}
	// A load that falls in a used slot replaces its report there.
	a, b := workqueue.Load{Busy: 1, Workers: 8}, workqueue.Load{Busy: 1, Workers: 8, QPS: 5}
	ma := c.trailer(a)
	if mb := c.trailer(b); mb.Get(orcaTrailer)[0] == ma.Get(orcaTrailer)[0] {
		t.Fatal("two different loads share a report")
	}
}

// FuzzReportEncoding: any queue's figures, encoded as the queue's ORCA trailer and decoded
// with the standard message, read back as they were, the wait to the nanosecond (a wait is
// sent in milliseconds, as a float).
func FuzzReportEncoding(f *testing.F) {
	f.Add(uint32(3), uint16(4), uint16(4), int64(2500*time.Microsecond))
	f.Add(uint32(0), uint16(1), uint16(8), int64(1001*time.Microsecond))
	f.Add(uint32(1<<31), uint16(0), uint16(0), int64(time.Hour))
	f.Fuzz(func(t *testing.T, queued uint32, busy, workers uint16, waitNs int64) {
		l := workqueue.Load{Queued: int(min(queued, maxFigure)), Busy: int(busy), Workers: int(workers),
			Wait: time.Duration(min(max(waitNs, 0), int64(maxWaitMs*float64(time.Millisecond))))}
		var c reportCache
		v := c.trailer(l).Get(orcaTrailer)
		if len(v) != 1 {
			t.Fatalf("%+v: %d trailer values", l, len(v))
		}
		var r v3orcapb.OrcaLoadReport
		if err := proto.Unmarshal([]byte(v[0]), &r); err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		got, ok := loadOf(&r)
		if want := (hedge.Load{Queued: l.Queued, Busy: l.Busy, Workers: l.Workers, Wait: l.Wait}); !ok || got != want {
			t.Fatalf("loadOf = %+v, %v; want %+v", got, ok, want)
		}
	})
}

// wrrShiftsToSecond dials two backends through a plain grpc-go client with service config sc
// (a weighted_round_robin balancer) and fails the test unless, within 20 s, the second backend
// (named by who) gets at least 80 % of a 200-call window: the weights followed its reports.
func wrrShiftsToSecond(t *testing.T, scheme, sc string, bs []*backend, who string) {
	t.Helper()
	r := manual.NewBuilderWithScheme(scheme)
	r.InitialState(resolver.State{Endpoints: []resolver.Endpoint{
		{Addresses: []resolver.Address{{Addr: bs[0].addr}}},
		{Addresses: []resolver.Address{{Addr: bs[1].addr}}},
	}})
	cc, err := grpc.NewClient(r.Scheme()+":///backends", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := healthpb.NewHealthClient(cc)

	const window = 200
	deadline := time.Now().Add(20 * time.Second)
	var share float64
	for round := 0; round < 200 && time.Now().Before(deadline); round++ {
		a0, b0 := bs[0].calls.Load(), bs[1].calls.Load()
		for range window {
			if _, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		a, b := bs[0].calls.Load()-a0, bs[1].calls.Load()-b0
		if a+b != window {
			t.Fatalf("%d calls reached the backends, want %d", a+b, window)
		}
		if share = float64(b) / window; share >= 0.8 {
			return
		}
	}
	t.Fatalf("the %s backend got %.0f%% of the last %d calls, want at least 80%% once weights follow the reports", who, 100*share, window)
}
