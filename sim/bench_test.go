package sim

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPoint runs one reference point (200,000 calls, "hedge, default budget", 70% load,
// "ignored") per iteration and reports events per second.
func BenchmarkPoint(b *testing.B) {
	for _, name := range []string{SetupNoHedge, SetupDefaultBudget, SetupRecommended} {
		b.Run(name, func(b *testing.B) {
			r := newRunner()
			params, err := Params{}.resolve()
			if err != nil {
				b.Fatal(err)
			}
			su := setup(b, name)
			b.ReportAllocs()
			var events int64
			for b.Loop() {
				p, err := r.run(context.Background(), params, su, 70, Ignored, 1)
				if err != nil {
					b.Fatal(err)
				}
				events += p.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}

// BenchmarkReplicaPoint runs one 200,000-call point on 4 replicas × 4 workers (one replica
// pausing 100 ms every 2 s, p2c) with the recommended setup at 50 % load, cancellation reaching
// the server after 1 ms: the replica engine's cost per point (target: ≤ 1 s on one core, no
// allocation per call).
func BenchmarkReplicaPoint(b *testing.B) {
	f, err := FamilyByName(FamilyReplicaPause)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{SetupNoHedge, SetupRecommended, SetupTiedRequests} {
		b.Run(name, func(b *testing.B) {
			r := newRunner()
			params, err := Params{TieDelay: time.Millisecond}.withModel(f.Params).resolve()
			if err != nil {
				b.Fatal(err)
			}
			su := setup(b, name)
			b.ReportAllocs()
			var events int64
			for b.Loop() {
				p, err := r.run(context.Background(), params, su, 50, Reaches, 1)
				if err != nil {
					b.Fatal(err)
				}
				events += p.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/point")
		})
	}
}

// BenchmarkReferenceSweep runs the full reference sweep: the six reference setups × five
// loads × two cancellation modes × 200,000 calls, one seed, on GOMAXPROCS goroutines. Run it
// with -benchtime=1x.
func BenchmarkReferenceSweep(b *testing.B) {
	var events int64
	for b.Loop() {
		r, err := Sweep(context.Background(), SweepConfig{Seeds: []uint64{1}, Setups: ReferenceSetups}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range r.Points {
			events += p.Events
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}
