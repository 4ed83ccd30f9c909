package hedgegrpc

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gRFC A6 makes the pushback trailer a signed 32-bit count of milliseconds, and reads a
// negative or unparseable value as "do not retry". A long Pushback means "back off for a long
// time": it must reach the client as the longest pushback the trailer can carry, not as a
// number that wrapped negative (a Pushback near the largest Duration, rounded up to whole
// milliseconds) or one past 32 bits (which gRPC's Java and C++ clients fail to parse).
func TestQueueLongPushbackFitsTrailer(t *testing.T) {
	checkLeaks(t)
	for _, pb := range []time.Duration{30 * 24 * time.Hour, math.MaxInt64} {
		t.Run(pb.String(), func(t *testing.T) {
			q, err := NewQueue(QueueConfig{Workers: 1, Queue: -1, Pushback: pb, QueueHealthCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			be := blockUntil(release)
			startBufconn(t, newInterceptor(t, Config{}), be, grpc.ChainUnaryInterceptor(q.UnaryServer))
			// A plain connection: the trailer reaches the test as the server wrote it.
			cc := plainBufconn(t, be)
			client := healthpb.NewHealthClient(cc)
			first := make(chan error, 1)
			go func() {
				_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
				first <- err
			}()
			if !waitFor(10*time.Second, func() bool { return q.Stats().Running == 1 }) {
				t.Fatal("the first call never took the worker")
			}
			var tr metadata.MD
			_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&tr))
			close(release)
			if err := <-first; err != nil {
				t.Fatalf("the running call: %v", err)
			}
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("queue full: err = %v, want RESOURCE_EXHAUSTED", err)
			}
			v := tr.Get(PushbackKey)
			if len(v) != 1 {
				t.Fatalf("trailer %v: want one %s", tr, PushbackKey)
			}
			ms, err := strconv.ParseInt(v[0], 10, 32)
			if err != nil || ms != math.MaxInt32 {
				t.Fatalf("Pushback %v sent as %s=%q, want %d (the longest signed 32-bit pushback)", pb, PushbackKey, v[0], math.MaxInt32)
			}
		})
	}
}
