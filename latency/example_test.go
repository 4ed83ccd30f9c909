package latency_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/latency"
)

func ExampleEstimator() {
	e, err := latency.New(latency.Config{Quantile: 0.9, Window: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// 100 calls over one second: 90 take 2ms, 10 take 50ms.
	for i := range 100 {
		d := 2 * time.Millisecond
		if i%10 == 9 {
			d = 50 * time.Millisecond
		}
		e.Record(start.Add(time.Duration(i)*10*time.Millisecond), d)
	}

	// Threshold is the hot path: one atomic load.
	if d, ok := e.Threshold(); ok {
		fmt.Println("hedge after about", d.Round(100*time.Microsecond))
	}

	now := start.Add(time.Second)
	p99, _ := e.Quantile(now, 0.99)
	fmt.Println("p99 about", p99.Round(time.Millisecond))
	fmt.Println("samples in window:", e.Count(now))

	// Ten seconds later the samples have left the window.
	later := now.Add(10 * time.Second)
	e.Refresh(later)
	_, ok := e.Threshold()
	fmt.Println("samples in window:", e.Count(later), "warm:", ok)
	// Output:
	// hedge after about 2ms
	// p99 about 50ms
	// samples in window: 100
	// samples in window: 0 warm: false
}

func ExampleConfig_Validate() {
	err := latency.Config{Quantile: 0.3}.Validate()
	fmt.Println(err)
	// Output:
	// latency: Config.Quantile must be in [0.5, 1), got 0.3
}
