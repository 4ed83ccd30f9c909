package workqueue_test

import (
	"context"
	"fmt"

	"github.com/hedgekit/hedge/workqueue"
)

// A server layer asks for a slot on the request's goroutine, runs its handler when admitted,
// and answers every other outcome in its own protocol.
func Example() {
	q, err := workqueue.New(workqueue.Config{Workers: 1, Queue: -1, HedgedLast: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	first := q.Acquire(ctx, false) // the only worker is free
	fmt.Println("first attempt:", first.Outcome)

	hedge := q.Acquire(ctx, true) // no worker and no room to wait
	fmt.Println("hedged copy:", hedge.Outcome)

	q.Release(false) // the first attempt's handler returned
	s := q.Stats()
	fmt.Printf("admitted %d, rejected %d, running %d\n", s.Admitted, s.Rejected, s.Running)
	// Output:
	// first attempt: admitted
	// hedged copy: rejected
	// admitted 1, rejected 1, running 0
}
