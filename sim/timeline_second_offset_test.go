package sim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/sim"
)

// TestTimelineSecondZeroIsVirtualSecondZero: Timeline.Seconds[i] is labelled "second i"
// (timeline.md's "second" column, timeline.html's axis and tooltips, hedgesim's "most hedges
// in a second: ... (second i ...)"), so it must hold the calls that ended in virtual second i
// of the run. At a low arrival rate the run's first call ends seconds into the run, and the
// recorder started its Seconds at the first event's second instead, shifting every label.
func TestTimelineSecondZeroIsVirtualSecondZero(t *testing.T) {
	epoch := time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC) // sim's virtual time zero
	var mu sync.Mutex
	ends := map[int]int{} // virtual second -> calls that finished in it
	first := -1
	cfg := hedge.Config{Observer: func(e hedge.Event) {
		if e.Kind != hedge.CallFinished {
			return
		}
		s := int(e.Time.Sub(epoch) / time.Second)
		mu.Lock()
		ends[s]++
		if first < 0 || s < first {
			first = s
		}
		mu.Unlock()
	}}
	tls, err := sim.Timelines(context.Background(), sim.SweepConfig{
		Workers: 1, Service: sim.Exponential{MeanTime: time.Second}, Calls: 40,
		Seeds: []uint64{1}, Loads: []float64{5}, Modes: []string{sim.Ignored},
		Extra: []sim.Setup{{Name: "observed", Config: cfg}}, Parallelism: 1,
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tls) != 1 {
		t.Fatalf("got %d timelines, want 1", len(tls))
	}
	if first <= 0 {
		t.Fatalf("the first call ended in second %d: the model no longer shows the offset this test is about", first)
	}
	secs := tls[0].Seconds
	for s, n := range ends {
		if s >= len(secs) || secs[s].Calls != n {
			got := -1
			if s < len(secs) {
				got = secs[s].Calls
			}
			t.Fatalf("virtual second %d: %d calls ended, timeline's Seconds[%d].Calls = %d (first call ended in second %d; %d seconds recorded)",
				s, n, s, got, first, len(secs))
		}
	}
}
