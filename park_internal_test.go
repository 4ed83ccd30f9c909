package hedge

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// TestParkedTimerStartsNoHedge: DoInline leaves its timer armed when it hands its driver on
// (race.park), so that timer may go off for no call (the driver waiting in its pool) or in
// the middle of a later call whose first attempt is running. Either way the wake-up is an
// early one: no hedge starts before the later call's own threshold, and the call answers as
// it would have. A timer that goes off before the moment the call driving it wants wakes
// nobody (see kit.armBy), but one due for a call that ends as it goes off sends its wake-up
// all the same, to whatever call the driver serves by then. The test sends that wake-up at
// those two moments, as such a timer would.
func TestParkedTimerStartsNoHedge(t *testing.T) {
	p := MustNew(Config{Trigger: After(time.Hour)})
	var last *driver[int]
	for i := range 40 {
		if last != nil && i%2 == 0 {
			last.kit.wakeDriver() // between calls: nobody to take over, a wake-up left on the channel
		}
		var lg Log
		v, err := DoInline(WithLog(context.Background(), &lg), p, func(ctx context.Context) (int, error) {
			d := ctx.(*attemptCtx).s.drv.(*driver[int])
			last = d
			if i%2 == 1 {
				// During the call: the timer's function takes the call over while this
				// attempt runs; the attempt answers once it has.
				go d.kit.wakeDriver()
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

// TestLazyTimerWakesOnlyWhenDue: DoInline's timer is set again only when it would go off too
// late for the call driving it (kit.armBy); going off early, it sets itself for the rest and
// wakes nobody, and once no call wants it, it wakes nobody either.
func TestLazyTimerWakesOnlyWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &kit{answers: make(chan int32, 4), lazy: true}
		k.onTimer = k.fire
		at := func() time.Time { // under the lock, as the timer's function writes it
			k.tmu.Lock()
			defer k.tmu.Unlock()
			return k.at
		}
		start := time.Now()
		wait := func(d time.Duration, want int) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := len(k.answers); got != want {
				t.Fatalf("at %v: %d wake-ups, want %d", time.Since(start), got, want)
			}
			for len(k.answers) > 0 {
				<-k.answers
			}
		}
		k.armBy(start, start.Add(10*time.Millisecond))
		k.armBy(start, start.Add(30*time.Millisecond)) // the timer, due sooner, is left alone
		if !at().Equal(start.Add(10 * time.Millisecond)) {
			t.Fatalf("timer set for %v, want 10ms: a later moment must not reset it", at().Sub(start))
		}
		wait(10*time.Millisecond, 0) // early: no wake-up
		if !at().Equal(start.Add(30 * time.Millisecond)) {
			t.Fatalf("after going off early the timer is set for %v, want 30ms", at().Sub(start))
		}
		wait(20*time.Millisecond, 1) // due

		now := time.Now()
		k.armBy(now, now.Add(50*time.Millisecond))
		k.armBy(now, now.Add(20*time.Millisecond)) // sooner than the timer: reset
		wait(20*time.Millisecond, 1)
		wait(30*time.Millisecond, 0) // nothing left for 50ms

		now = time.Now()
		k.armBy(now, now.Add(10*time.Millisecond))
		k.disarm() // the call is over
		wait(10*time.Millisecond, 0)
		if !at().IsZero() {
			t.Fatalf("a timer that went off for nobody is still taken as set, for %v", at().Sub(now))
		}
	})
}
