package hedge

import (
	"runtime/metrics"
	"sync"
	"time"
)

// newSchedulerProbe returns a function reporting the 99th percentile of scheduler latency
// (how long runnable goroutines waited for a thread) since its previous call, read from
// runtime/metrics. A process whose goroutines wait milliseconds to run is measuring itself
// when it times a call.
func newSchedulerProbe() func() time.Duration {
	var (
		mu   sync.Mutex
		prev []uint64
		s    = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	)
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindFloat64Histogram {
			return 0
		}
		h := s[0].Value.Float64Histogram()
		if len(prev) != len(h.Counts) {
			prev = make([]uint64, len(h.Counts))
		}
		var total uint64
		for i, c := range h.Counts {
			total += c - prev[i]
		}
		if total == 0 {
			copy(prev, h.Counts)
			return 0
		}
		want := total - total/100 // the 99th percentile
		var seen uint64
		var q float64
		for i, c := range h.Counts {
			seen += c - prev[i]
			if seen >= want {
				q = h.Buckets[i+1] // upper bound of the bucket
				break
			}
		}
		copy(prev, h.Counts)
		if q > 3600 { // the last bucket is open (+Inf)
			q = 3600
		}
		return time.Duration(q * float64(time.Second))
	}
}
