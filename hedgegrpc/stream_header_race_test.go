package hedgegrpc

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// blockedIn reports whether some goroutine is parked on a channel receive inside fn: the
// test's way to know a call is waiting, with no sleep.
func blockedIn(fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[chan receive") && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// A server-streaming caller may read the headers in one goroutine while another receives, as
// a plain gRPC stream allows (its Header blocks until the headers arrive). Asked while the race
// to the first message runs, Header must wait for the winner and give its headers: "nil, nil"
// tells the caller the stream ended without headers, which it did not.
func TestServerStreamHeaderDuringRaceWaitsForWinner(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	bs := startBackends(t, 2, func(int) *backend {
		return &backend{watch: func(b *backend, req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
			if attemptOf(s.Context()) == 0 {
				<-s.Context().Done() // the slow first attempt: it loses
				return s.Context().Err()
			}
			select {
			case <-release: // the hedge answers once the test has asked for the headers
			case <-s.Context().Done():
				return s.Context().Err()
			}
			if err := s.SendHeader(metadata.Pairs("from", b.name)); err != nil {
				return err
			}
			return s.Send(serving())
		}}
	})
	hi := newInterceptor(t, Config{Policy: hedgeNow(), Idempotent: []string{watchMethod}})
	client := healthpb.NewHealthClient(dial(t, hi, bs))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recvd := make(chan error, 1)
	go func() {
		_, err := s.Recv() // starts the race
		recvd <- err
	}()
	// Both attempts are on the wire: the race has started and nobody has won.
	if !waitFor(5*time.Second, func() bool { return bs[0].calls.Load()+bs[1].calls.Load() == 2 }) {
		t.Fatal("the call was not hedged")
	}
	type answer struct {
		md  metadata.MD
		err error
	}
	header := make(chan answer, 1)
	go func() {
		md, err := s.Header()
		header <- answer{md, err}
	}()
	// Let the hedge answer once Header has returned (wrong: no winner yet) or is waiting.
	var got answer
	returned := false
	waitFor(5*time.Second, func() bool {
		select {
		case got = <-header:
			returned = true
			return true
		default:
			return blockedIn("(*hedgedStream).Header")
		}
	})
	close(release)
	if !returned {
		got = <-header
	}
	if err := <-recvd; err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if from := got.md.Get("from"); got.err != nil || len(from) != 1 || from[0] == "" {
		t.Fatalf("Header during the race = %v, %v; want the winning hedge's headers", got.md, got.err)
	}
	cancel()
}
