package sim

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestClientInFlightSequential: with one call in flight per client, a client never has two
// calls on the server at once (so with one client the server never serves two attempts of
// different calls at the same time), waiting calls count from their arrival, and the wait
// shows: one sequential client at a load its one-at-a-time calls cannot keep up with at the
// server's pace is slower than the same calls unbounded.
func TestClientInFlightSequential(t *testing.T) {
	calls := scaled(20_000)
	base := Params{Calls: calls, Workers: 16, Service: Exponential{MeanTime: 10 * time.Millisecond}}
	seq := base
	seq.ClientInFlight = 1
	r := newRunner()
	p, err := seq.resolve()
	if err != nil {
		t.Fatal(err)
	}
	maxInFlight := 0
	r.s.onStart = func(call, attempt, rp int, svc int64, ejected bool) {
		if n := r.s.inflight[0]; n > maxInFlight {
			maxInFlight = n
		}
	}
	// 3 % load of 16 workers is 48 calls a second of 10 ms each: one sequential client is
	// busy about half the time, and calls that arrive while it is busy wait.
	pt, err := r.run(t.Context(), p, setupNamed(t, SetupNoHedge), 3, Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	if maxInFlight != 1 {
		t.Errorf("a sequential client had %d calls in flight", maxInFlight)
	}
	free := mustRun(t, base, SetupNoHedge, 3, Ignored, 1)
	if pt.MeanWaitMs > 0.01 {
		t.Errorf("one call at a time waited %.3f ms in the server's queue, want none", pt.MeanWaitMs)
	}
	// M/M/1 in the client at ρ = 0.48: mean time in the system 10 ms / (1-0.48) ≈ 19 ms.
	if pt.MeanMs < 1.6*free.MeanMs || pt.MeanMs < 16 || pt.MeanMs > 23 {
		t.Errorf("sequential mean %.2f ms, unbounded %.2f ms; want about 19 ms (M/M/1 at ρ 0.48)", pt.MeanMs, free.MeanMs)
	}
	if pt.ClientInFlight != 1 || pt.FailedPct != 0 || pt.Collapse {
		t.Errorf("point %+v", pt)
	}
}

// TestHeavyClientShare: the heavy client makes its share of the calls, the others split the rest.
func TestHeavyClientShare(t *testing.T) {
	s := newSim()
	s.clients, s.heavyShare, s.cliKey = 32, 0.5, streamKey(1, streamClient)
	count := make([]int, 32)
	n := 64_000
	for i := range n {
		count[s.clientOf(i)]++
	}
	if c := float64(count[0]) / float64(n); c < 0.49 || c > 0.51 {
		t.Errorf("the heavy client made %.3f of the calls, want 0.5", c)
	}
	for c := 1; c < 32; c++ {
		if share := float64(count[c]) / float64(n); share < 0.5/31*0.85 || share > 0.5/31*1.15 {
			t.Errorf("light client %d made %.4f of the calls, want %.4f", c, share, 0.5/31)
		}
	}
}

// BenchmarkManyClients: a point with 4 and with 256 clients, each with its own policy (the
// engine's cost per call should not grow with the clients beyond building their policies).
func BenchmarkManyClients(b *testing.B) {
	for _, clients := range []int{4, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			p, err := Params{Calls: 20_000, Clients: clients}.resolve()
			if err != nil {
				b.Fatal(err)
			}
			r := newRunner()
			setup := Setups(0)[6] // recommended
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.run(context.Background(), p, setup, 50, Ignored, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
