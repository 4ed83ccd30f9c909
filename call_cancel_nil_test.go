package hedge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
)

// A driver that hands Cancel a nil cause (a simulator's "the caller gave up", a driver that
// read context.Cause of a context not yet done) must not end the call as a success: Err is
// documented as nil only when an attempt won.
func TestCancelWithNilCauseIsNotASuccess(t *testing.T) {
	p := hedge.MustNew(hedge.Config{Trigger: hedge.After(10 * time.Millisecond)})
	now := time.Unix(1000, 0)
	c := p.NewCall(hedge.CallOptions{})
	c.Start(now)
	c.Cancel(now.Add(time.Millisecond), nil)
	if !c.Done() {
		t.Fatal("Cancel did not end the call")
	}
	if c.Err() == nil {
		t.Fatalf("Cancel(now, nil): Err() = nil with Winner() = %d: the call reads as won with no answer", c.Winner())
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", c.Err())
	}
}
