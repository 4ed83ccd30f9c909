package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/hedgekit/hedge/breaker"
)

// The breaker trips after five failures in a row, refuses calls while open,
// and lets one trial call through once OpenFor has passed.
func Example() {
	b, err := breaker.New(breaker.Config{
		OnStateChange: func(from, to breaker.State, now time.Time) {
			fmt.Printf("%v -> %v\n", from, to)
		},
	})
	if err != nil {
		panic(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	for i := range 5 {
		now := start.Add(time.Duration(i) * time.Millisecond)
		t, err := b.Acquire(now)
		if err != nil {
			panic(err)
		}
		b.Release(now.Add(time.Millisecond), t, breaker.Failure)
	}

	_, err = b.Acquire(start.Add(time.Second))
	fmt.Println(errors.Is(err, breaker.ErrOpen))

	later := start.Add(6 * time.Second)
	t, err := b.Acquire(later)
	fmt.Println(err, t.Trial())
	b.Release(later.Add(time.Millisecond), t, breaker.Success)
	fmt.Println(b.State(later))
	// Output:
	// closed -> open
	// true
	// open -> half-open
	// <nil> true
	// half-open -> closed
	// closed
}

// ErrorRate tells a hedging policy that a closed breaker is not a healthy
// dependency: here 40% of calls fail, below the trip point of 0.5, and the
// gate that suppresses hedges at half the trip point would act.
func ExampleBreaker_ErrorRate() {
	b, _ := breaker.New(breaker.Config{})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		now := start.Add(time.Duration(i) * 100 * time.Millisecond)
		t, _ := b.Acquire(now)
		o := breaker.Success
		if i%5 < 2 {
			o = breaker.Failure
		}
		b.Release(now, t, o)
	}
	now := start.Add(5 * time.Second)
	rate, armed := b.ErrorRate(now)
	const suppressAt = 0.5
	fmt.Println(b.State(now), rate, armed, rate >= suppressAt*b.TripPoint())
	// Output: closed 0.4 true true
}

// Allow is the two-step form for integrations, on the real clock.
func ExampleBreaker_Allow() {
	b, _ := breaker.New(breaker.Config{})
	done, err := b.Allow()
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	// ... make the call ...
	done(breaker.Success)
	fmt.Println("ok")
	// Output: ok
}
