package breaker

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

type change struct {
	from, to State
	at       time.Duration
}

// newRecorded builds a breaker whose state changes are appended to *log.
func newRecorded(t *testing.T, cfg Config, log *[]change) *Breaker {
	t.Helper()
	var mu sync.Mutex
	cfg.OnStateChange = func(from, to State, now time.Time) {
		mu.Lock()
		*log = append(*log, change{from, to, now.Sub(t0)})
		mu.Unlock()
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustNew(t testing.TB, cfg Config) *Breaker {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call makes one call at d with outcome o and returns Acquire's error.
func call(b *Breaker, d time.Duration, o Outcome) error {
	tk, err := b.Acquire(at(d))
	if err != nil {
		return err
	}
	b.Release(at(d), tk, o)
	return nil
}

func TestStringers(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", State(7): "State(7)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
	for o, want := range map[Outcome]string{Success: "success", Failure: "failure", Ignored: "ignored", Outcome(9): "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string // "" means valid
	}{
		{Config{}, ""},
		{Config{ConsecutiveFailures: -1, FailureRatio: -1}, ""},
		{Config{FailureRatio: 1}, ""},
		{Config{FailureRatio: 1.5}, "Config.FailureRatio"},
		{Config{FailureRatio: math.NaN()}, "Config.FailureRatio"},
		{Config{Window: -time.Second}, "Config.Window"},
		{Config{MinimumCalls: -1}, "Config.MinimumCalls"},
		{Config{OpenFor: -1}, "Config.OpenFor"},
		{Config{HalfOpenCalls: -2}, "Config.HalfOpenCalls"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", c.cfg, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "breaker: "+c.field+" ") {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg, err, c.field)
		}
		if _, err2 := New(c.cfg); err2 == nil {
			t.Errorf("New(%+v) accepted an invalid config", c.cfg)
		}
	}
}

func TestTripsOnConsecutiveFailures(t *testing.T) {
	var log []change
	b := newRecorded(t, Config{}, &log)
	// A success in between resets the run; Ignored outcomes neither extend
	// nor break it.
	for i, o := range []Outcome{Failure, Failure, Failure, Failure, Success, Failure, Ignored, Failure, Failure, Failure} {
		if err := call(b, time.Duration(i)*time.Millisecond, o); err != nil {
			t.Fatalf("call %d refused: %v", i, err)
		}
		if s := b.State(at(time.Duration(i) * time.Millisecond)); s != Closed {
			t.Fatalf("after call %d state = %v, want closed", i, s)
		}
	}
	if err := call(b, 10*time.Millisecond, Failure); err != nil {
		t.Fatal(err)
	}
	if s := b.State(at(10 * time.Millisecond)); s != Open {
		t.Fatalf("after 5 failures in a row state = %v, want open", s)
	}
	if _, err := b.Acquire(at(11 * time.Millisecond)); !errors.Is(err, ErrOpen) {
		t.Fatalf("Acquire on open breaker = %v, want ErrOpen", err)
	}
	if len(log) != 1 || log[0] != (change{Closed, Open, 10 * time.Millisecond}) {
		t.Fatalf("state changes = %v", log)
	}
}

func TestTripsOnRatioWithMinimumCalls(t *testing.T) {
	// Consecutive rule off, so only the ratio rule can trip.
	b := mustNew(t, Config{ConsecutiveFailures: -1, MinimumCalls: 10, FailureRatio: 0.5})
	// Nine calls all failing: above the ratio, but below MinimumCalls.
	for i := range 9 {
		if err := call(b, time.Duration(i)*time.Millisecond, Failure); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.State(at(9 * time.Millisecond)); s != Closed {
		t.Fatalf("below MinimumCalls state = %v, want closed", s)
	}
	if err := call(b, 9*time.Millisecond, Failure); err != nil {
		t.Fatal(err)
	}
	if s := b.State(at(9 * time.Millisecond)); s != Open {
		t.Fatalf("at MinimumCalls with ratio 1 state = %v, want open", s)
	}
}

func TestRatioTripsExactlyAtRatio(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: -1, MinimumCalls: 10, FailureRatio: 0.5})
	// S F S F ... : after call 10 the window holds 5/10 = 0.5.
	for i := range 10 {
		o := Success
		if i%2 == 1 {
			o = Failure
		}
		if s := b.State(at(time.Duration(i) * time.Millisecond)); s != Closed {
			t.Fatalf("before call %d state = %v", i, s)
		}
		if err := call(b, time.Duration(i)*time.Millisecond, o); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.State(at(10 * time.Millisecond)); s != Open {
		t.Fatalf("at ratio 0.5 state = %v, want open", s)
	}
}

func TestFortyPercentFailingStaysClosedAndArmed(t *testing.T) {
	b := mustNew(t, Config{}) // ratio 0.5, 20 calls, 10s window
	// 100 calls over 5s. The highest ratio after 20 calls is 10/22, so it never trips.
	for i := range 100 {
		o := Success
		if i%5 < 2 { // pattern F F S S S: 40%, never 5 in a row
			o = Failure
		}
		if err := call(b, time.Duration(i)*50*time.Millisecond, o); err != nil {
			t.Fatalf("call %d refused: %v", i, err)
		}
	}
	now := at(99 * 50 * time.Millisecond)
	if s := b.State(now); s != Closed {
		t.Fatalf("state = %v, want closed", s)
	}
	rate, armed := b.ErrorRate(now)
	if math.Abs(rate-0.4) > 1e-12 || !armed {
		t.Fatalf("ErrorRate = %v, %v; want 0.4, true", rate, armed)
	}
	if tp := b.TripPoint(); tp != 0.5 {
		t.Fatalf("TripPoint = %v, want 0.5", tp)
	}
	if c, f := b.Counts(now); c != 100 || f != 40 {
		t.Fatalf("Counts = %d, %d; want 100, 40", c, f)
	}
}

func TestErrorRateArming(t *testing.T) {
	b := mustNew(t, Config{MinimumCalls: 4, ConsecutiveFailures: -1, FailureRatio: -1})
	if r, armed := b.ErrorRate(t0); r != 0 || armed {
		t.Fatalf("empty ErrorRate = %v, %v", r, armed)
	}
	steps := []struct {
		o     Outcome
		rate  float64
		armed bool
	}{
		{Failure, 1, false},       // 1 call
		{Success, 0.5, false},     // 2 calls
		{Success, 1.0 / 3, false}, // 3 calls
		{Success, 0.25, false},    // 4 calls but one failure only
		{Failure, 0.4, true},      // 5 calls, 2 failures
		{Ignored, 0.4, true},      // not counted
	}
	for i, s := range steps {
		if err := call(b, time.Duration(i)*time.Second, s.o); err != nil {
			t.Fatal(err)
		}
		r, armed := b.ErrorRate(at(time.Duration(i) * time.Second))
		if math.Abs(r-s.rate) > 1e-12 || armed != s.armed {
			t.Fatalf("step %d: ErrorRate = %v, %v; want %v, %v", i, r, armed, s.rate, s.armed)
		}
	}
	if tp := b.TripPoint(); tp != 1 {
		t.Fatalf("TripPoint with ratio rule off = %v, want 1", tp)
	}
}

func TestWindowSlides(t *testing.T) {
	b := mustNew(t, Config{Window: 10 * time.Second, ConsecutiveFailures: -1, FailureRatio: -1})
	// Slots are 1s wide; the window at time T covers the slot of T and the nine before it.
	for i := range 10 {
		if err := call(b, time.Duration(i)*time.Second, Failure); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		d     time.Duration
		calls int
	}{
		{9 * time.Second, 10},
		{9*time.Second + 999*time.Millisecond, 10},
		{10 * time.Second, 9},
		{14 * time.Second, 5},
		{19 * time.Second, 0},
		{time.Hour, 0},
	}
	for _, c := range cases {
		if n, f := b.Counts(at(c.d)); n != c.calls || f != c.calls {
			t.Errorf("Counts at %v = %d, %d; want %d, %d", c.d, n, f, c.calls, c.calls)
		}
	}
	// A slot reused a full window later starts clean.
	if err := call(b, 20*time.Second, Success); err != nil {
		t.Fatal(err)
	}
	if n, f := b.Counts(at(20 * time.Second)); n != 1 || f != 0 {
		t.Fatalf("Counts after reuse = %d, %d; want 1, 0", n, f)
	}
	// A call a full window late for its slot is dropped, not mixed into the new period.
	b.Release(at(10*time.Second), Ticket{gen: genOf(b.state.Load())}, Failure)
	if n, f := b.Counts(at(20 * time.Second)); n != 1 || f != 0 {
		t.Fatalf("Counts after late call = %d, %d; want 1, 0", n, f)
	}
}

func TestZeroTimeBase(t *testing.T) {
	// A simulator may start its virtual clock at the zero time.Time.
	b := mustNew(t, Config{MinimumCalls: 2, ConsecutiveFailures: -1, FailureRatio: -1})
	var z time.Time
	for i := range 3 {
		if err := call2(b, z.Add(time.Duration(i)*time.Second), Failure); err != nil {
			t.Fatal(err)
		}
	}
	if r, armed := b.ErrorRate(z.Add(3 * time.Second)); r != 1 || !armed {
		t.Fatalf("ErrorRate = %v, %v", r, armed)
	}
}

func call2(b *Breaker, now time.Time, o Outcome) error {
	tk, err := b.Acquire(now)
	if err != nil {
		return err
	}
	b.Release(now, tk, o)
	return nil
}

// trip opens b with five failures at d.
func trip(t *testing.T, b *Breaker, d time.Duration) {
	t.Helper()
	for range 5 {
		if err := call(b, d, Failure); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.State(at(d)); s != Open {
		t.Fatalf("state = %v, want open", s)
	}
}

func TestOpenTurnsHalfOpenAfterOpenFor(t *testing.T) {
	var log []change
	b := newRecorded(t, Config{OpenFor: 5 * time.Second}, &log)
	trip(t, b, 0)
	if s := b.State(at(5*time.Second - 1)); s != Open {
		t.Fatalf("just before OpenFor state = %v, want open", s)
	}
	if _, err := b.Acquire(at(5*time.Second - 1)); !errors.Is(err, ErrOpen) {
		t.Fatalf("Acquire just before OpenFor = %v", err)
	}
	if s := b.State(at(5 * time.Second)); s != HalfOpen {
		t.Fatalf("at OpenFor state = %v, want half-open", s)
	}
	want := []change{{Closed, Open, 0}, {Open, HalfOpen, 5 * time.Second}}
	if len(log) != 2 || log[0] != want[0] || log[1] != want[1] {
		t.Fatalf("state changes = %v, want %v", log, want)
	}
}

func TestHalfOpenAdmitsExactlyHalfOpenCalls(t *testing.T) {
	b := mustNew(t, Config{HalfOpenCalls: 3})
	trip(t, b, 0)
	now := at(5 * time.Second)
	var trials []Ticket
	for i := range 3 {
		tk, err := b.Acquire(now)
		if err != nil {
			t.Fatalf("trial %d refused: %v", i, err)
		}
		if !tk.Trial() {
			t.Fatalf("trial %d: Trial() = false", i)
		}
		trials = append(trials, tk)
	}
	for range 3 {
		if _, err := b.Acquire(now); !errors.Is(err, ErrOpen) {
			t.Fatalf("fourth trial Acquire = %v, want ErrOpen", err)
		}
	}
	// Two successes do not close it; the third does.
	b.Release(now, trials[0], Success)
	b.Release(now, trials[1], Success)
	if s := b.State(now); s != HalfOpen {
		t.Fatalf("after 2 of 3 successes state = %v, want half-open", s)
	}
	b.Release(now, trials[2], Success)
	if s := b.State(now); s != Closed {
		t.Fatalf("after 3 of 3 successes state = %v, want closed", s)
	}
	tk, err := b.Acquire(now)
	if err != nil || tk.Trial() {
		t.Fatalf("Acquire when closed = %v, trial %v", err, tk.Trial())
	}
}

func TestHealthyTrialClosesWithFreshWindow(t *testing.T) {
	var log []change
	b := newRecorded(t, Config{}, &log)
	trip(t, b, 0)
	if r, _ := b.ErrorRate(at(time.Second)); r != 1 {
		t.Fatalf("ErrorRate while open = %v, want 1 (the window that tripped it)", r)
	}
	tk, err := b.Acquire(at(6 * time.Second))
	if err != nil || !tk.Trial() {
		t.Fatalf("trial Acquire = %v, trial %v", err, tk.Trial())
	}
	b.Release(at(6*time.Second+time.Millisecond), tk, Success)
	if s := b.State(at(6 * time.Second)); s != Closed {
		t.Fatalf("state = %v, want closed", s)
	}
	if n, _ := b.Counts(at(6 * time.Second)); n != 0 {
		t.Fatalf("window after close holds %d calls, want 0", n)
	}
	// The run of failures restarted too: four more failures do not trip.
	for range 4 {
		_ = call(b, 7*time.Second, Failure)
	}
	if s := b.State(at(7 * time.Second)); s != Closed {
		t.Fatalf("state = %v, want closed", s)
	}
	want := []change{{Closed, Open, 0}, {Open, HalfOpen, 6 * time.Second}, {HalfOpen, Closed, 6*time.Second + time.Millisecond}}
	if len(log) != 3 {
		t.Fatalf("state changes = %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("state changes = %v, want %v", log, want)
		}
	}
}

func TestFailedTrialReopens(t *testing.T) {
	b := mustNew(t, Config{HalfOpenCalls: 2, OpenFor: time.Second})
	trip(t, b, 0)
	now := at(time.Second)
	t1, err1 := b.Acquire(now)
	t2, err2 := b.Acquire(now)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	b.Release(now, t1, Success)
	b.Release(now.Add(100*time.Millisecond), t2, Failure)
	if s := b.State(now.Add(100 * time.Millisecond)); s != Open {
		t.Fatalf("after failed trial state = %v, want open", s)
	}
	// Open for a full OpenFor from the failure.
	if s := b.State(now.Add(1099 * time.Millisecond)); s != Open {
		t.Fatalf("state = %v, want open", s)
	}
	if s := b.State(now.Add(1100 * time.Millisecond)); s != HalfOpen {
		t.Fatalf("state = %v, want half-open", s)
	}
	// The earlier success belonged to the previous half-open episode: two new successes are needed.
	t3, _ := b.Acquire(now.Add(1100 * time.Millisecond))
	b.Release(now.Add(1100*time.Millisecond), t3, Success)
	if s := b.State(now.Add(1100 * time.Millisecond)); s != HalfOpen {
		t.Fatalf("state = %v, want half-open", s)
	}
}

func TestIgnoredTrialReleasesPermitOnly(t *testing.T) {
	b := mustNew(t, Config{})
	trip(t, b, 0)
	now := at(5 * time.Second)
	tk, err := b.Acquire(now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(now); !errors.Is(err, ErrOpen) {
		t.Fatalf("second trial = %v, want ErrOpen", err)
	}
	b.Release(now, tk, Ignored)
	if s := b.State(now); s != HalfOpen {
		t.Fatalf("after ignored trial state = %v, want half-open", s)
	}
	tk2, err := b.Acquire(now)
	if err != nil || !tk2.Trial() {
		t.Fatalf("trial after ignored = %v", err)
	}
	if _, err := b.Acquire(now); !errors.Is(err, ErrOpen) {
		t.Fatalf("second trial after ignored = %v, want ErrOpen", err)
	}
	b.Release(now, tk2, Failure)
	if s := b.State(now); s != Open {
		t.Fatalf("state = %v, want open", s)
	}
}

func TestStaleTicketsIgnored(t *testing.T) {
	b := mustNew(t, Config{})
	old, err := b.Acquire(t0)
	if err != nil {
		t.Fatal(err)
	}
	trip(t, b, 0)
	// A call admitted while closed finishes after the trip: not counted.
	before, _ := b.Counts(t0)
	b.Release(t0, old, Failure)
	if after, _ := b.Counts(t0); after != before {
		t.Fatalf("stale release counted: %d -> %d", before, after)
	}
	// Nor does it close a half-open breaker.
	b.State(at(5 * time.Second))
	b.Release(at(5*time.Second), old, Success)
	b.Release(at(5*time.Second), Ticket{}, Success)
	if s := b.State(at(5 * time.Second)); s != HalfOpen {
		t.Fatalf("state = %v, want half-open", s)
	}
}

func TestAllow(t *testing.T) {
	b := mustNew(t, Config{ConsecutiveFailures: 2})
	for range 2 {
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		done(Failure)
		done(Failure) // second call does nothing
	}
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow after trip = %v, want ErrOpen", err)
	}
}

func TestOnStateChangeMayCallBreaker(t *testing.T) {
	var b *Breaker
	var seen State = -1
	cfg := Config{ConsecutiveFailures: 1, OnStateChange: func(_, _ State, now time.Time) {
		seen = b.State(now) // would deadlock if called under the lock
	}}
	b = mustNew(t, cfg)
	_ = call(b, 0, Failure)
	if seen != Open {
		t.Fatalf("state seen from callback = %v, want open", seen)
	}
}

func TestConcurrent(t *testing.T) {
	var changes atomic.Int64
	b := mustNew(t, Config{
		MinimumCalls: 50, HalfOpenCalls: 3, OpenFor: 10 * time.Millisecond, Window: time.Second,
		OnStateChange: func(State, State, time.Time) { changes.Add(1) },
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := at(time.Duration(i) * time.Millisecond)
				tk, err := b.Acquire(now)
				if err != nil {
					if !errors.Is(err, ErrOpen) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				o := Outcome((i + g) % 3)
				if i%400 < 200 {
					o = Failure
				}
				b.Release(now, tk, o)
				r, _ := b.ErrorRate(now)
				if r < 0 || r > 1 {
					t.Errorf("ErrorRate = %v", r)
				}
			}
		})
	}
	wg.Wait()
	if changes.Load() == 0 {
		t.Fatal("no state changes under a failing load")
	}
}

func FuzzConfig(f *testing.F) {
	f.Add(0, 0.0, int64(0), 0, int64(0), 0, uint64(12345))
	f.Add(-1, -1.0, int64(1), 1, int64(1), 1, uint64(1))
	f.Add(3, 1.0, int64(time.Second), 5, int64(time.Millisecond), 4, uint64(99))
	f.Add(2, 0.3, int64(7), 2, int64(3), 2, uint64(7))
	f.Fuzz(func(t *testing.T, consecutive int, ratio float64, window int64, minCalls int, openFor int64, halfOpen int, seed uint64) {
		cfg := Config{
			ConsecutiveFailures: consecutive, FailureRatio: ratio, Window: time.Duration(window),
			MinimumCalls: minCalls, OpenFor: time.Duration(openFor), HalfOpenCalls: halfOpen % 1000,
		}
		b, err := New(cfg)
		if err != nil {
			if cfg.Validate() == nil {
				t.Fatalf("New failed but Validate passed: %v", err)
			}
			return
		}
		if tp := b.TripPoint(); !(tp >= 0 && tp <= 1) {
			t.Fatalf("TripPoint = %v", tp)
		}
		// Drive it with a pseudo-random but reproducible sequence.
		x := seed | 1
		now := time.Time{}.Add(time.Duration(seed % 1e9))
		trials := 0
		for range 300 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			now = now.Add(time.Duration(x % uint64(2*time.Second)))
			tk, err := b.Acquire(now)
			switch {
			case err == nil:
				if tk.Trial() {
					trials++
				}
				b.Release(now, tk, Outcome(x>>40%3))
				if tk.Trial() {
					trials--
				}
			case !errors.Is(err, ErrOpen):
				t.Fatalf("Acquire: %v", err)
			}
			s := b.State(now)
			if s != Closed && s != Open && s != HalfOpen {
				t.Fatalf("State = %v", s)
			}
			r, armed := b.ErrorRate(now)
			if !(r >= 0 && r <= 1) {
				t.Fatalf("ErrorRate = %v", r)
			}
			c, fl := b.Counts(now)
			if fl > c || c < 0 || (armed && fl < 2) {
				t.Fatalf("Counts = %d, %d armed %v", c, fl, armed)
			}
		}
	})
}

func TestPanickingOnStateChangeDoesNotKeepTheTrialPermit(t *testing.T) {
	panicking := true
	b := mustNew(t, Config{OnStateChange: func(from, to State, now time.Time) {
		if to == HalfOpen && panicking {
			panic("on state change")
		}
	}})
	trip(t, b, 0)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Acquire did not pass OnStateChange's panic on")
			}
		}()
		b.Acquire(at(5 * time.Second))
	}()
	panicking = false
	tk, err := b.Acquire(at(5*time.Second + 1))
	if err != nil || !tk.Trial() {
		t.Fatalf("after the panic Acquire = %+v, %v; want the trial the panic did not take", tk, err)
	}
	b.Release(at(5*time.Second+1), tk, Success)
	if s := b.State(at(5*time.Second + 1)); s != Closed {
		t.Fatalf("after a healthy trial state = %v, want closed", s)
	}
}
