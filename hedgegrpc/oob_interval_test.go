package hedgegrpc

import (
	"context"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// intervalRecorder is an ORCA out-of-band service that records the interval each stream
// asks for, sends one report, and holds the stream until its client goes.
type intervalRecorder struct {
	v3orcaservicegrpc.UnimplementedOpenRcaServiceServer
	asked chan time.Duration
}

func (r *intervalRecorder) StreamCoreMetrics(req *v3orcaservicegrpc.OrcaLoadReportRequest, stream v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsServer) error {
	select {
	case r.asked <- req.GetReportInterval().AsDuration():
	default:
	}
	if err := stream.Send(&v3orcapb.OrcaLoadReport{}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// A report older than hedge.LoadMaxAge counts for nothing, so a LoadReportInterval longer than
// that would leave most decisions without one: the balancer asks for two thirds of LoadMaxAge
// instead, and for a shorter interval as given.
func TestOOBIntervalAskedAtMostLoadMaxAge(t *testing.T) {
	checkLeaks(t)
	for _, c := range []struct{ set, want time.Duration }{
		{2 * time.Second, longestOOBInterval},
		{80 * time.Millisecond, 80 * time.Millisecond},
	} {
		rec := &intervalRecorder{asked: make(chan time.Duration, 1)}
		lis := listen(t)
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, answerAtOnce())
		v3orcaservicegrpc.RegisterOpenRcaServiceServer(srv, rec)
		go srv.Serve(lis)
		hi := newInterceptor(t, Config{LoadReportInterval: c.set})
		cc, err := grpc.NewClient(lis.Addr().String(), append(hi.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		// The bound is for a failing run only: the stream opens as the connection is ready.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		select {
		case got := <-rec.asked:
			if got != c.want {
				t.Errorf("LoadReportInterval %v: the stream asked for reports every %v, want %v", c.set, got, c.want)
			}
		case <-ctx.Done():
			t.Errorf("LoadReportInterval %v: no out-of-band stream was opened", c.set)
		}
		cancel()
		cc.Close()
		srv.Stop()
	}
}
