package budget

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, cfg Config) *Budget {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// consistent checks, on a quiet Budget, that the balance is exactly the
// reserve plus what the slots hold, and that every slot holds an epoch of the
// window.
func consistent(t *testing.T, b *Budget) {
	t.Helper()
	head := b.head.Load()
	sum := b.reserve
	seen := map[uint64]bool{}
	for i := range b.slots {
		w := b.slots[i].Load()
		sum += unpack(w)
		seen[w>>valueBits] = true
	}
	for e := head - numSlots + 1; e <= head; e++ {
		if !seen[uint64(e)&tagMask] {
			t.Errorf("no slot holds epoch %d of the window ending at %d", e, head)
		}
	}
	if got := b.balance.Load(); got != sum {
		t.Errorf("balance = %d units, reserve + slots = %d", got, sum)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string // substring of the error; "" means valid
	}{
		{Config{}, ""},
		{Config{Off: true}, ""},
		{Config{Ratio: Zero, MinPerSecond: Zero}, ""},
		{Config{Ratio: 1000, MinPerSecond: 1e6, Window: time.Second}, ""},
		{Config{Window: time.Second}, ""},
		{Config{Ratio: -0.1}, "Config.Ratio must be in [0, 1000], got -0.1"},
		{Config{Ratio: 1000.5}, "Config.Ratio must be in [0, 1000], got 1000.5"},
		{Config{Ratio: math.NaN()}, "Config.Ratio must be in [0, 1000], got NaN"},
		{Config{Ratio: 2000, Off: true}, "Config.Ratio"},
		{Config{MinPerSecond: -1}, "Config.MinPerSecond must be >= 0 and finite, got -1"},
		{Config{MinPerSecond: math.Inf(1)}, "Config.MinPerSecond must be >= 0 and finite, got +Inf"},
		{Config{MinPerSecond: math.NaN()}, "Config.MinPerSecond"},
		{Config{MinPerSecond: 2e8}, "Config.MinPerSecond × Window must be at most 1e+09 withdrawals, got 2e+09"},
		{Config{Window: -time.Second}, "Config.Window must be >= 0, got -1s"},
		{Config{Window: 999 * time.Millisecond}, "Config.Window must be 0 (default 10s) or at least 1s, got 999ms"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		_, newErr := New(tt.cfg)
		if tt.want == "" {
			if err != nil || newErr != nil {
				t.Errorf("%+v: Validate = %v, New = %v; want nil", tt.cfg, err, newErr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "budget: ") {
			t.Errorf("%+v: Validate = %v; want budget: ...%s", tt.cfg, err, tt.want)
		}
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(newErr, ErrInvalidConfig) {
			t.Errorf("%+v: errors do not wrap ErrInvalidConfig: %v, %v", tt.cfg, err, newErr)
		}
	}
}

func TestDefaults(t *testing.T) {
	b := mustNew(t, Config{})
	want := Config{Ratio: 0.10, MinPerSecond: 1, Window: 10 * time.Second}
	if got := b.Config(); got != want {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
	if got := b.Balance(base); got != 10 {
		t.Errorf("fresh default Balance = %v, want the reserve, 10", got)
	}
	// 10 deposits fund exactly one more withdrawal.
	for range 10 {
		b.Deposit(base)
	}
	if got := b.Balance(base); got != 11 {
		t.Errorf("Balance after 10 deposits = %v, want 11", got)
	}
}

func TestExactBoundConcurrent(t *testing.T) {
	b := mustNew(t, Config{}) // 0.10 per deposit + 1/s over 10s
	for range 1000 {
		b.Deposit(base)
	}
	const goroutines, tries = 64, 100
	var ok atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range tries {
				// Spread over the first half of the window.
				if b.TryWithdraw(base.Add(time.Duration(g*tries+i) * time.Millisecond / 2)) {
					ok.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if got, want := ok.Load(), int64(math.Floor(0.10*1000+1*10)); got != want {
		t.Errorf("successful withdrawals = %d, want exactly %d", got, want)
	}
	if got := b.Balance(base.Add(4 * time.Second)); got != 0 {
		t.Errorf("Balance after spending everything = %v, want 0", got)
	}
	consistent(t, b)
}

func TestBoundConcurrentDepositsAndWithdrawals(t *testing.T) {
	b := mustNew(t, Config{Ratio: 0.25, MinPerSecond: 0.5}) // reserve 5
	const goroutines, each = 32, 200
	var deposits, withdrawals atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				now := base.Add(time.Duration(i) * time.Millisecond)
				if (g+i)%3 == 0 {
					if b.TryWithdraw(now) {
						withdrawals.Add(1)
					}
				} else {
					b.Deposit(now)
					deposits.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d, w := deposits.Load(), withdrawals.Load()
	if float64(w) > 0.25*float64(d)+5 {
		t.Errorf("%d withdrawals > 0.25 × %d deposits + 5", w, d)
	}
	// Everything is inside one window, so the balance is exact.
	want := 5 + 0.25*float64(d) - float64(w)
	if got := b.Balance(base.Add(time.Second)); got != want {
		t.Errorf("Balance = %v, want %v", got, want)
	}
	consistent(t, b)
}

func TestConcurrentAcrossSlots(t *testing.T) {
	// Goroutines cross many slot boundaries at once. Expiry must stay exact:
	// once they stop, the balance is the reserve plus what the slots hold.
	b := mustNew(t, Config{Window: time.Second, Ratio: 0.5, MinPerSecond: 3})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 3000 {
				// Each goroutine runs on its own slightly skewed clock, so
				// some report times behind the head.
				now := base.Add(time.Duration(i)*time.Millisecond + time.Duration(g)*7*time.Millisecond)
				if i%2 == 0 {
					b.Deposit(now)
				} else {
					b.TryWithdraw(now)
				}
				if i%100 == 0 {
					b.Balance(now)
				}
			}
		})
	}
	wg.Wait()
	consistent(t, b)
	// A full window later, everything has expired but the reserve.
	if got := b.Balance(base.Add(5 * time.Second)); got != 3 {
		t.Errorf("Balance after everything expired = %v, want 3", got)
	}
	consistent(t, b)
}

func TestExpiry(t *testing.T) {
	b := mustNew(t, Config{}) // reserve 10, window 10s
	for range 100 {
		b.Deposit(base) // +10
	}
	for range 15 {
		if !b.TryWithdraw(base.Add(2 * time.Second)) {
			t.Fatal("withdrawal refused with funds available")
		}
	}
	if got := b.Balance(base.Add(2 * time.Second)); got != 5 {
		t.Fatalf("Balance = %v, want 20 - 15 = 5", got)
	}
	// Just before a Window has passed since base, the deposits still count.
	if got := b.Balance(base.Add(10*time.Second - time.Nanosecond)); got != 5 {
		t.Errorf("Balance just before Window = %v, want 5", got)
	}
	// After it, they are gone; the 15 withdrawals are not, so the budget is
	// in debt: 10 - 15 = -5, reported as 0.
	at := base.Add(10 * time.Second)
	if got := b.Balance(at); got != 0 {
		t.Errorf("Balance with deposits expired = %v, want 0", got)
	}
	if got := b.units(at); got != -5*unit {
		t.Errorf("raw balance = %d, want %d", got, -5*unit)
	}
	if b.TryWithdraw(at) {
		t.Error("withdrawal funded while in debt")
	}
	// Once the withdrawals expire as well, the reserve is whole again.
	if got := b.Balance(base.Add(12 * time.Second)); got != 10 {
		t.Errorf("Balance after everything expired = %v, want the reserve, 10", got)
	}
	consistent(t, b)
}

func TestSlidingWindow(t *testing.T) {
	b := mustNew(t, Config{Ratio: 1, MinPerSecond: Zero}) // no reserve
	b.Deposit(base)
	b.Deposit(base.Add(5 * time.Second))
	b.Deposit(base.Add(5 * time.Second))
	if got := b.Balance(base.Add(9 * time.Second)); got != 3 {
		t.Errorf("Balance at 9s = %v, want 3", got)
	}
	if got := b.Balance(base.Add(10 * time.Second)); got != 2 {
		t.Errorf("Balance at 10s = %v, want 2 (the first deposit expired)", got)
	}
	if got := b.Balance(base.Add(15 * time.Second)); got != 0 {
		t.Errorf("Balance at 15s = %v, want 0", got)
	}
	if b.TryWithdraw(base.Add(15 * time.Second)) {
		t.Error("withdrawal funded with no reserve and no deposits")
	}
	consistent(t, b)
}

func TestReserveRefills(t *testing.T) {
	b := mustNew(t, Config{Ratio: Zero, MinPerSecond: 0.5, Window: 4 * time.Second}) // reserve 2
	for i, want := range []bool{true, true, false, false} {
		if got := b.TryWithdraw(base); got != want {
			t.Errorf("withdrawal %d = %v, want %v", i, got, want)
		}
	}
	b.Deposit(base) // Ratio Zero: deposits fund nothing
	if b.TryWithdraw(base) {
		t.Error("deposit with Ratio Zero funded a withdrawal")
	}
	later := base.Add(4 * time.Second)
	if got := b.Balance(later); got != 2 {
		t.Errorf("Balance a Window later = %v, want 2", got)
	}
	if !b.TryWithdraw(later) {
		t.Error("reserve did not refill")
	}
}

func TestLongIdle(t *testing.T) {
	b := mustNew(t, Config{})
	for range 50 {
		b.Deposit(base)
	}
	b.TryWithdraw(base)
	// Years later, nothing of it remains; slot tags that wrap do not matter.
	for _, d := range []time.Duration{time.Hour, 24 * 365 * time.Hour, 100 * 365 * 24 * time.Hour} {
		if got := b.Balance(base.Add(d)); got != 10 {
			t.Errorf("Balance after %v = %v, want 10", d, got)
		}
		consistent(t, b)
	}
}

func TestStaleTimes(t *testing.T) {
	b := mustNew(t, Config{})
	now := base.Add(time.Minute)
	b.Balance(base) // base is the first time seen
	b.Balance(now)  // the head moves a minute on
	// A deposit dated more than a Window behind has already expired.
	for range 100 {
		b.Deposit(base)
	}
	if got := b.Balance(now); got != 10 {
		t.Errorf("Balance after stale deposits = %v, want 10", got)
	}
	// A stale withdrawal is charged now, not forgotten.
	for range 10 {
		if !b.TryWithdraw(base) {
			t.Fatal("stale withdrawal refused with reserve left")
		}
	}
	if b.TryWithdraw(base) || b.TryWithdraw(now) {
		t.Error("stale withdrawals escaped the budget")
	}
	// A time a little behind the head is still inside the window.
	b.Deposit(now.Add(-5 * time.Second))
	if got := b.units(now); got != 1000 {
		t.Errorf("raw balance = %d, want 1000 (one deposit of 0.1)", got)
	}
	// Times before the first time seen work as well.
	c := mustNew(t, Config{Ratio: 1})
	c.Deposit(base)
	c.Deposit(base.Add(-3 * time.Second))
	if got := c.Balance(base); got != 12 {
		t.Errorf("Balance with an earlier deposit = %v, want 12", got)
	}
	if got := c.Balance(base.Add(7 * time.Second)); got != 11 {
		t.Errorf("Balance once the earlier deposit expired = %v, want 11", got)
	}
	consistent(t, c)
}

func TestOff(t *testing.T) {
	b := mustNew(t, Config{Off: true})
	for i := range 10000 {
		b.Deposit(base)
		if !b.TryWithdraw(base.Add(time.Duration(i))) {
			t.Fatal("Off refused a withdrawal")
		}
	}
	if got := b.Balance(base); !math.IsInf(got, 1) {
		t.Errorf("Off Balance = %v, want +Inf", got)
	}
}

func TestSlotOverflow(t *testing.T) {
	// Deposits cap at what a slot holds; a budget that full funds the
	// withdrawals anyway, and expiry stays exact.
	b := mustNew(t, Config{Ratio: 1000})
	b.slots[0].Store(pack(0, maxValue-5*unit))
	b.balance.Store(b.reserve + maxValue - 5*unit)
	b.Deposit(base)
	if got := unpack(b.slots[0].Load()); got != maxValue {
		t.Errorf("slot = %d, want capped at %d", got, int64(maxValue))
	}
	consistent(t, b)
	// Withdrawals a slot cannot hold are refused and change nothing.
	b.slots[0].Store(pack(0, minValue+unit/2))
	b.slots[1].Store(pack(-19, maxValue))
	b.slots[2].Store(pack(-18, maxValue))
	b.balance.Store(b.reserve + minValue + unit/2 + 2*maxValue)
	consistent(t, b)
	bal := b.units(base)
	if b.TryWithdraw(base) {
		t.Error("withdrawal beyond the slot's range succeeded")
	}
	if got := b.units(base); got != bal {
		t.Errorf("refused withdrawal moved the balance: %d -> %d", bal, got)
	}
	if got := b.Balance(base.Add(b.cfg.Window)); got != 10 {
		t.Errorf("Balance a Window later = %v, want 10", got)
	}
}

func TestPack(t *testing.T) {
	for _, ep := range []int64{0, 1, -1, numSlots, 1 << 40, math.MinInt64} {
		for _, v := range []int64{0, 1, -1, unit, -unit, maxValue, minValue} {
			w := pack(ep, v)
			if unpack(w) != v || w>>valueBits != uint64(ep)&tagMask {
				t.Errorf("pack(%d, %d) unpacks to %d, tag %d", ep, v, unpack(w), w>>valueBits)
			}
		}
	}
	for ep := int64(-45); ep < 45; ep++ {
		if s := slotOf(ep); s < 0 || s >= numSlots || (ep-int64(s))%numSlots != 0 {
			t.Errorf("slotOf(%d) = %d", ep, s)
		}
	}
}

func TestZeroBudgetPanics(t *testing.T) {
	for name, f := range map[string]func(*Budget){
		"Deposit":     func(b *Budget) { b.Deposit(base) },
		"TryWithdraw": func(b *Budget) { b.TryWithdraw(base) },
		"Balance":     func(b *Budget) { b.Balance(base) },
	} {
		func() {
			defer func() {
				if s, _ := recover().(string); !strings.HasPrefix(s, "budget: ") {
					t.Errorf("%s on a zero Budget: recover() = %q, want a budget: panic", name, s)
				}
			}()
			f(new(Budget))
		}()
	}
}

func TestAllocs(t *testing.T) {
	b := mustNew(t, Config{Ratio: 1})
	b.Deposit(base)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		now := base.Add(time.Duration(i) * 10 * time.Millisecond)
		b.Deposit(now)
		b.TryWithdraw(now)
	})
	if allocs != 0 {
		t.Errorf("Deposit+TryWithdraw allocate %v times, want 0", allocs)
	}
}

// model is the serial reference: a list of (epoch, units) entries, trimmed
// to the window, with the same rules for times behind the head.
type model struct {
	deposit, reserve int64
	head             int64
	entries          []modelEntry
}

type modelEntry struct{ epoch, units int64 }

func (m *model) advance(ep int64) {
	if ep <= m.head {
		return
	}
	m.head = ep
	kept := m.entries[:0]
	for _, e := range m.entries {
		if e.epoch > ep-numSlots {
			kept = append(kept, e)
		}
	}
	m.entries = kept
}

func (m *model) balance() int64 {
	s := m.reserve
	for _, e := range m.entries {
		s += e.units
	}
	return s
}

func (m *model) count() (deposits, withdrawals int64) {
	for _, e := range m.entries {
		if e.units < 0 {
			withdrawals++
		} else {
			deposits++
		}
	}
	return
}

func FuzzBudget(f *testing.F) {
	f.Add(0.1, 1.0, uint8(10), []byte{0, 0, 0, 2, 2, 2, 255, 2, 3})
	f.Add(0.0, 0.0, uint8(0), []byte{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2})
	f.Add(Zero, Zero, uint8(1), []byte{0, 4, 8, 2, 6, 10, 14, 252, 3})
	f.Add(0.333, 0.7, uint8(3), []byte{0, 1, 0, 1, 2, 2, 2, 40, 41, 42, 200, 2, 2, 2})
	f.Fuzz(func(t *testing.T, ratio, minPerSecond float64, windowSeconds uint8, ops []byte) {
		cfg := Config{Ratio: ratio, MinPerSecond: minPerSecond, Window: time.Duration(windowSeconds) * time.Second}
		b, err := New(cfg)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "budget: Config.") {
				t.Fatalf("New(%+v): %q", cfg, err)
			}
			// Fold the numbers into range, so every input also runs the
			// sequence.
			fold := func(v, m float64) float64 {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return 0
				}
				return math.Mod(math.Abs(v), m)
			}
			cfg.Ratio, cfg.MinPerSecond = fold(ratio, 2), fold(minPerSecond, 5)
			if b, err = New(cfg); err != nil {
				t.Fatalf("New(%+v) after folding: %v", cfg, err)
			}
		}
		if b.deposit < 0 || b.reserve < 0 || b.width <= 0 {
			t.Fatalf("New(%+v) accepted with deposit %d, reserve %d, width %d", cfg, b.deposit, b.reserve, b.width)
		}
		if len(ops) > 2000 {
			ops = ops[:2000]
		}
		m := &model{deposit: b.deposit, reserve: b.reserve}
		now := base
		var first time.Time // the Budget's epoch 0 starts at the first time it sees
		for i, op := range ops {
			// The top six bits move the clock: mostly forward by a third
			// of a slot or so, sometimes back, and at 63 by two windows.
			code := int64(op >> 2)
			if code == 63 {
				now = now.Add(2 * b.cfg.Window)
			} else {
				now = now.Add(time.Duration((code - 8) * b.width / 12))
			}
			if i == 0 {
				first = now
			}
			ep := floorDiv(int64(now.Sub(first)), b.width)
			m.advance(ep)
			switch op & 3 {
			case 0, 1:
				b.Deposit(now)
				if ep > m.head-numSlots && m.deposit > 0 {
					m.entries = append(m.entries, modelEntry{ep, m.deposit})
				}
			case 2:
				got := b.TryWithdraw(now)
				want := m.balance() >= unit
				if got != want {
					t.Fatalf("op %d: TryWithdraw = %v, model says %v (model balance %d)", i, got, want, m.balance())
				}
				if want {
					if ep <= m.head-numSlots {
						ep = m.head
					}
					m.entries = append(m.entries, modelEntry{ep, -unit})
					// The bound, at the moment of every withdrawal.
					d, w := m.count()
					if w*unit > d*m.deposit+m.reserve {
						t.Fatalf("op %d: %d withdrawals > %d deposits × %d + %d units", i, w, d, m.deposit, m.reserve)
					}
				}
			case 3:
				if got, want := b.units(now), m.balance(); got != want {
					t.Fatalf("op %d: balance %d units, model %d", i, got, want)
				}
				if got := b.Balance(now); got < 0 || got > float64(m.reserve+int64(len(m.entries))*m.deposit)/unit {
					t.Fatalf("op %d: Balance %v outside [0, bound]", i, got)
				}
			}
		}
		if got, want := b.units(now), m.balance(); got != want {
			t.Fatalf("final balance %d units, model %d", got, want)
		}
		consistent(t, b)
	})
}

func BenchmarkDeposit(b *testing.B) {
	bu := mustNew(b, Config{})
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		// 1µs per call: a slot rolls every 500,000 calls.
		bu.Deposit(base.Add(time.Duration(i) * time.Microsecond))
	}
}

func BenchmarkDepositParallel(b *testing.B) {
	bu := mustNew(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			i++
			bu.Deposit(base.Add(time.Duration(i) * time.Microsecond))
		}
	})
}

// withdrawBudget funds every withdrawal of a benchmark from the reserve, so
// the benchmark measures the success path: the balance CAS and the slot CAS.
func withdrawBudget(b *testing.B) *Budget {
	return mustNew(b, Config{MinPerSecond: 1e8})
}

func BenchmarkTryWithdraw(b *testing.B) {
	bu := withdrawBudget(b)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		if !bu.TryWithdraw(base.Add(time.Duration(i) * time.Microsecond)) {
			b.Fatal("refused")
		}
	}
}

func BenchmarkTryWithdrawParallel(b *testing.B) {
	bu := withdrawBudget(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			i++
			if !bu.TryWithdraw(base.Add(time.Duration(i) * time.Microsecond)) {
				b.Error("refused")
				return
			}
		}
	})
}

func BenchmarkTryWithdrawRefused(b *testing.B) {
	bu := mustNew(b, Config{MinPerSecond: Zero, Ratio: Zero})
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		if bu.TryWithdraw(base.Add(time.Duration(i) * time.Microsecond)) {
			b.Fatal("funded")
		}
	}
}
