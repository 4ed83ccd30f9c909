package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// unpausedLoop is unpaused as it was, one pause at a time: the reference the closed form must
// agree with.
func unpausedLoop(ph, every, length, t, svc int64) int64 {
	for {
		k := (t - ph) / every
		if t < ph {
			k = -1
		}
		ps := ph + k*every
		if k >= 0 && t < ps+length {
			t = ps + length
			continue
		}
		next := ps + every
		if t+svc <= next {
			return t + svc
		}
		svc -= next - t
		t = next + length
	}
}

// unpaused must give what a walk over the pauses one at a time gives, to the nanosecond, so
// that no figure of a valid run moves.
func TestUnpausedMatchesTheLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := &sim{}
	s.pausePhase = []int64{0}
	for i := range 200_000 {
		every := 1 + r.Int64N(int64(3*time.Second))
		if i%3 == 0 {
			every = 1 + r.Int64N(50)
		}
		length := r.Int64N(every)
		ph := r.Int64N(every)
		now := r.Int64N(int64(time.Hour))
		svc := r.Int64N(int64(time.Second))
		if i%5 == 0 {
			svc = r.Int64N(100)
		}
		if svc/(every-length) > 1<<16 {
			continue // the loop would take too long
		}
		s.pausePhase[0], s.pauseEvery, s.pauseLen = ph, every, length
		if got, want := s.unpaused(0, now, svc), unpausedLoop(ph, every, length, now, svc); got != want {
			t.Fatalf("unpaused(phase %d, every %d, length %d, t %d, svc %d) = %d, want %d", ph, every, length, now, svc, got, want)
		}
	}
}

// Pauses of a few nanoseconds are valid (0 <= Length < Every), and must not make a run take
// minutes: the end of each service was found by walking the pauses one by one, about 10^7 of
// them per 10 ms request (200 calls took about 25 s; 2000 took four minutes).
func TestShortPausesRunInBoundedTime(t *testing.T) {
	done := make(chan Point, 1)
	go func() {
		pt, err := Run(Params{Calls: 200, Pauses: Pauses{Every: 2, Length: 1}}, Setup{Name: "no hedge"}, 30, Ignored, 1)
		if err != nil {
			t.Error(err)
		}
		done <- pt
	}()
	select {
	case pt := <-done:
		if pt.Collapse || pt.P50Ms < 15 {
			t.Errorf("pauses of 1ns every 2ns: p50 %v ms, collapse %v; want a service about twice as long as without (p50 about 20 ms)", pt.P50Ms, pt.Collapse)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a run of 200 calls with pauses of 1ns every 2ns did not end within 5s")
	}
}
