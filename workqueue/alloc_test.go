//go:build !race

package workqueue

import (
	"context"
	"testing"
)

// A request that finds a free worker costs no allocation: the queue sits on every request
// of a server.
func TestFastPathAllocs(t *testing.T) {
	q, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		q.Acquire(ctx, false)
		q.Release(false)
	}); n != 0 {
		t.Errorf("Acquire + Release on a free worker: %v allocations, want 0", n)
	}
}
