package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Bursts that fill their whole cycle leave no rest to keep the mean rate: BurstRate 0.5 halved
// the load (silently: a point at 30 % ran at 15 %), BurstRate 0 stopped the arrivals (each
// arrival then took 2^20 steps of the rate and landed at the end of time: about 25 s, then a
// collapse). A StepAt of NaN was accepted and ignored. All must be refused.
func TestArrivalsWithoutARestAreRefused(t *testing.T) {
	for _, a := range []Arrivals{
		{BurstEvery: time.Second, BurstFor: time.Second, BurstRate: 0.5},
		{BurstEvery: time.Second, BurstFor: time.Second, BurstRate: 0},
		{StepAt: math.NaN(), StepFrom: 0.5},
	} {
		if err := a.check(); err == nil {
			t.Errorf("Arrivals %+v accepted", a)
		}
	}
}

// Bursts far shorter than the time between calls (a BurstEvery of nanoseconds) made each
// arrival walk the rate's changes up to a bound of 2^20, then land at the end of time: 2000
// calls took about 25 s and the point was reported as a collapse of the queue. The run must
// end at once with an error that names BurstEvery.
func TestNanosecondBurstsAreAnError(t *testing.T) {
	type result struct {
		pt  Point
		err error
	}
	done := make(chan result, 1)
	go func() {
		pt, err := Run(Params{Calls: 500, Arrivals: Arrivals{BurstEvery: 2, BurstFor: 1, BurstRate: 1.5}}, Setup{Name: "no hedge"}, 30, Ignored, 1)
		done <- result{pt, err}
	}()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "BurstEvery") {
			t.Errorf("bursts every 2ns: error %v, collapse %v; want an error naming BurstEvery", r.err, r.pt.Collapse)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a run of 500 calls with bursts every 2ns did not end within 3s")
	}
}
