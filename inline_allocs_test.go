//go:build !race

package hedge_test

import (
	"context"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// TestDoInlineAllocations: a call whose first attempt answers before its hedge is due
// allocates the driver (the first attempt inside it), its event channel, the timer and the
// timer's function, and nothing else. (Not under -race, whose sync.Pool drops pooled Calls.)
func TestDoInlineAllocations(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(time.Hour)})
	ctx := context.Background()
	answer := func(context.Context) (int, error) { return 1, nil }
	hedge.DoInline(ctx, p, answer) // fill the pool
	if n := testing.AllocsPerRun(200, func() { hedge.DoInline(ctx, p, answer) }); n > 4 {
		t.Errorf("DoInline allocates %v times per call, want at most 4", n)
	}
}
