package winrate_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/winrate"
)

// A dependency whose hedges never win: the loop halves the share of would-be
// hedges it lets start each time it has counted enough of them to be sure
// (none of 51 winning, at the default Floor of 10 %), so every second or
// third 15s decision period.
func Example() {
	l, err := winrate.New(winrate.Config{}) // Floor 0.1, Window 1m, 10 samples
	if err != nil {
		panic(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for p := range 4 {
		periodStart := start.Add(time.Duration(p) * 15 * time.Second)
		started := 0
		for i := range 100 {
			now := periodStart.Add(time.Duration(i) * 100 * time.Millisecond)
			if l.Admit(now) {
				l.Started(now) // ... and it loses to the primary
				started++
			}
		}
		end := periodStart.Add(15 * time.Second)
		fmt.Printf("period %d: %d hedges started, allowance now %v\n", p, started, l.Allowance(end))
	}
	// Output:
	// period 0: 100 hedges started, allowance now 0.5
	// period 1: 50 hedges started, allowance now 0.5
	// period 2: 50 hedges started, allowance now 0.25
	// period 3: 25 hedges started, allowance now 0.25
}

// Admit is deterministic: at allowance 0.5 every second would-be hedge
// starts.
func ExampleLoop_Admit() {
	l, _ := winrate.New(winrate.Config{})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 60 {
		l.Started(start) // sixty hedges, none won
	}
	now := start.Add(15 * time.Second)
	fmt.Println(l.Allowance(now))
	for range 6 {
		fmt.Print(l.Admit(now), " ")
	}
	fmt.Println()
	// Output:
	// 0.5
	// false true false true false true
}
