package hedge

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestParkedTimerStartsNoHedge: DoInline leaves its timer armed when it hands its driver on
// (race.park), so that timer may go off for no call (the driver waiting in its pool) or in
// the middle of a later call whose first attempt is running. Either way the wake-up is an
// early one: no hedge starts before the later call's own threshold, and the call answers as
// it would have. The test makes the kit's timer function run at those two moments, as a
// parked timer going off would.
func TestParkedTimerStartsNoHedge(t *testing.T) {
	p := MustNew(Config{Trigger: After(time.Hour)})
	var last *driver[int]
	for i := range 40 {
		if last != nil && i%2 == 0 {
			last.kit.fire() // between calls: nobody to take over, a wake-up left on the channel
		}
		var lg Log
		v, err := DoInline(WithLog(context.Background(), &lg), p, func(ctx context.Context) (int, error) {
			d := ctx.(*attemptCtx).s.drv.(*driver[int])
			last = d
			if i%2 == 1 {
				// During the call: the timer's function takes the call over while this
				// attempt runs; the attempt answers once it has.
				go d.kit.fire()
				for d.owner.Load() != ownerOther {
					runtime.Gosched()
				}
			}
			return i, nil
		})
		if err != nil || v != i {
			t.Fatalf("call %d = %d, %v", i, v, err)
		}
		if len(lg.Attempts) != 1 {
			t.Fatalf("call %d: %d attempts (%v), want 1: a parked timer's wake-up started a hedge", i, len(lg.Attempts), lg.String())
		}
	}
	if m := p.Measured(); m.HedgesStarted != 0 || m.Calls != 40 {
		t.Errorf("Measured: %d calls, %d hedges started; want 40 calls and no hedge", m.Calls, m.HedgesStarted)
	}
}
