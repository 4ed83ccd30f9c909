package hedgegrpc

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// dialOOB serves a queue (64 workers, no per-call report) over bufconn, with out-of-band
// reports when oob, and returns a client through the hedging balancer, which opens the
// report stream (at DefaultOOBMinInterval) when oob. It waits for the first report.
func dialOOB(b *testing.B, oob bool) healthpb.HealthClient {
	q, err := NewQueue(QueueConfig{Workers: 64, QueueHealthCheck: true})
	if err != nil {
		b.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(q.UnaryServer), grpc.ChainStreamInterceptor(q.StreamServer))
	healthpb.RegisterHealthServer(srv, answerAtOnce())
	var interval time.Duration
	if oob {
		interval = DefaultOOBMinInterval
		if err := q.RegisterOOB(srv, 0); err != nil {
			b.Fatal(err)
		}
	}
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	var got atomic.Bool
	f := func(string, hedge.Load) { got.Store(true) }
	oobReceived.Store(&f)
	b.Cleanup(func() { oobReceived.Store(nil) })
	cc, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfigFor(interval)),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	client := healthpb.NewHealthClient(cc)
	if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		b.Fatal(err)
	}
	if oob && !waitFor(10*time.Second, got.Load) {
		b.Fatal("no out-of-band report arrived")
	}
	return client
}

// BenchmarkORCAOOBPaired is what out-of-band reports cost a call, paired as
// BenchmarkORCAReportPaired is: each iteration makes one call to a server with the queue
// alone (off) and one to a server whose queue also streams its load out of band to this
// client (on: Queue.RegisterOOB, and the hedging balancer listening at
// DefaultOOBMinInterval, which also hands each report to the replica choice at every pick);
// both clients go through the hedging balancer. It reports the medians and the overheads of
// the median and of the mean.
func BenchmarkORCAOOBPaired(b *testing.B) {
	off := dialOOB(b, false)
	on := dialOOB(b, true)
	benchPaired(b, off, on)
}

// BenchmarkORCAOOB is BenchmarkORCAOOBPaired unpaired, one server and client at a time, for
// counting instructions: run each under cachegrind at two iteration counts and take the
// difference per call, which leaves out the set-up.
//
//	GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no ./hedgegrpc.test -test.run '^$' -test.bench 'ORCAOOB/on' -test.benchtime 2000x
func BenchmarkORCAOOB(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			client := dialOOB(b, mode == "on")
			ctx := context.Background()
			req := &healthpb.HealthCheckRequest{}
			b.ReportAllocs()
			b.ResetTimer()
			// A counted loop, not b.Loop: b.Loop may run the function more than once at a
			// fixed -test.benchtime Nx, and the instruction count needs exactly N calls
			// more between two counts.
			for range b.N {
				if _, err := client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOOBDeliver is what one out-of-band report costs the client as it arrives
// (oobState.deliver): the replica choice's and one watched policy's ReportLoad, for a picker
// of four backends. A fleet's client receives one report per backend per interval.
func BenchmarkOOBDeliver(b *testing.B) {
	addrs := []string{"a:1", "b:1", "c:1", "d:1"}
	pool, err := replica.NewPool(addrs, replica.Config{Balancer: replica.P2C})
	if err != nil {
		b.Fatal(err)
	}
	policy, err := hedge.New(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
	if err != nil {
		b.Fatal(err)
	}
	var s oobState
	ready := make([]readyBackend, len(addrs))
	for i, a := range addrs {
		ready[i] = readyBackend{addr: a, load: &backendLoad{addr: a, state: &s}}
	}
	p := newPicker(ready, pool)
	s.install(p)
	s.watch(time.Now(), p, policy)
	rl := &receivedLoad{at: time.Now(), load: hedge.Load{Queued: 1, Busy: 4, Workers: 4}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.deliver(ready[i%len(ready)].load, rl)
	}
	if q, _, ok := policy.ServerQueue(rl.at); !ok || q != 1 {
		b.Fatalf("the policy reads %d queued (%v), want the delivered report's 1", q, ok)
	}
}
