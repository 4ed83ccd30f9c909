// Package latency estimates a quantile of recent attempt latencies without
// locks, so that a hedging policy can ask "how slow is unusually slow right
// now?" on every call for the price of one atomic load.
//
// An [Estimator] keeps a ring of time slots covering a trailing window. Each
// slot holds a histogram of log-linear buckets: 16 sub-buckets per power of two
// of nanoseconds, from 2^10 ns (about 1µs) to 2^37 ns (about 137s). A bucket is
// at most 1/16 of its lower bound wide, and a quantile is interpolated linearly
// inside its bucket, so an estimate is typically within a few percent of the
// exact sample quantile. Samples below about 1µs count as about 1µs and samples
// above about 137s count as about 137s: hedging decisions are made in
// milliseconds, and clamping keeps the histogram small and fixed in size.
//
// Every method takes the current time explicitly, so a simulator can drive an
// Estimator with virtual time and get the same answers on every run.
package latency

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of [Config].
const (
	DefaultQuantile       = 0.95
	DefaultWindow         = 30 * time.Second
	DefaultMinimumSamples = 20
)

// MinimumWindow is the shortest Window a Config accepts: the window is cut
// into slots and refreshed every Window/64, which needs some resolution.
const MinimumWindow = time.Millisecond

const (
	subBucketBits = 4
	subBuckets    = 1 << subBucketBits // sub-buckets per power of two
	minExp        = 10                 // smallest bucket starts at 2^10 ns ≈ 1µs
	maxExp        = 37                 // largest bucket ends at 2^37 ns ≈ 137s
	numBuckets    = (maxExp - minExp) * subBuckets

	// numSlots is how many time slots cover the window. More slots make
	// expiry smoother; fewer make the slow path (Quantile, Refresh) cheaper.
	numSlots = 16

	// refreshDivisor sets how often Record refreshes the cached threshold:
	// every Window/refreshDivisor.
	refreshDivisor = 64

	// okBit marks a warm threshold in the cached word; the low bits hold the
	// threshold in nanoseconds (at most 2^37, far below the bit).
	okBit = 1 << 63
)

// smallest and largest values a bucket can report.
const (
	minValue = time.Duration(1) << minExp
	maxValue = time.Duration(1) << maxExp
)

// ErrInvalidConfig is wrapped by every error from [Config.Validate] and [New].
var ErrInvalidConfig = errors.New("latency: invalid Config")

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

func invalid(format string, args ...any) error {
	return &configError{msg: "latency: " + fmt.Sprintf(format, args...)}
}

// Config configures an [Estimator]. A zero field selects its default, so the
// zero Config is a p95 over 30 seconds that is warm after 20 samples.
type Config struct {
	// Quantile is the quantile Threshold tracks. 0 means 0.95. It must be in
	// [0.5, 1): below the median a hedge would fire on most calls.
	Quantile float64

	// Window is the trailing window of samples. 0 means 30s. It must be 0 or
	// at least MinimumWindow. Samples leave the window in steps of Window/16:
	// a sample counts for at least 15/16 of Window and never for longer than
	// Window.
	Window time.Duration

	// MinimumSamples is how many samples the window must hold before
	// Threshold reports ok. 0 means 20. It must be >= 0. A quantile of a
	// handful of samples is noise, and hedging on noise wastes work.
	MinimumSamples int
}

// Validate reports the first field that breaks its rule. The error names the
// field and the rule and wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	if c.Quantile != 0 && !(c.Quantile >= 0.5 && c.Quantile < 1) {
		return invalid("Config.Quantile must be in [0.5, 1), got %v", c.Quantile)
	}
	if c.Window < 0 {
		return invalid("Config.Window must be >= 0, got %v", c.Window)
	}
	if c.Window != 0 && c.Window < MinimumWindow {
		return invalid("Config.Window must be 0 (default %v) or at least %v, got %v",
			DefaultWindow, MinimumWindow, c.Window)
	}
	if c.MinimumSamples < 0 {
		return invalid("Config.MinimumSamples must be >= 0, got %d", c.MinimumSamples)
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.Quantile == 0 {
		c.Quantile = DefaultQuantile
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinimumSamples == 0 {
		c.MinimumSamples = DefaultMinimumSamples
	}
	return c
}

// An Estimator tracks a quantile of the latencies recorded in a trailing time
// window. Record and Threshold are lock-free and do not allocate, so every
// call of a policy can use them; Quantile, Count and Refresh sum the whole
// window and are for the slow path.
//
// An Estimator must be built with [New]; the zero value panics on use. It is
// safe for concurrent use. Build one per dependency and share it: a fresh
// Estimator per call never warms up.
//
// Time inside an Estimator is measured from the first time any method is
// given, so two Estimators fed the same sequence of (now, d) give the same
// answers, whatever the wall clock says.
type Estimator struct {
	cfg        Config
	slotWidth  int64 // nanoseconds per slot
	interval   int64 // nanoseconds between scheduled refreshes
	minSamples int64

	// base is the first time the Estimator saw; epochs count slot widths
	// from it. Set once by compare-and-swap.
	base atomic.Pointer[time.Time]

	// cached is the threshold Threshold reports: okBit | nanoseconds.
	cached atomic.Uint64

	// next is when (nanoseconds after base) Record next refreshes cached.
	next atomic.Int64

	// warmEp is the epoch of the last refresh that found the window warm.
	warmEp atomic.Int64

	// staleFrom is the first epoch of the current run of samples every slot
	// is newer than (noEpoch: none). A run that spans a Window is the clock.
	staleFrom atomic.Int64

	// last is the epoch of the latest sample Record kept (noEpoch: none): the present,
	// which tells a slot claimed by a stray time far ahead from one that is current.
	last atomic.Int64

	slots [numSlots]slot
}

// slot is the histogram of one time slot. epoch says which slot width it
// holds; a slot whose epoch has fallen out of the window is reused by the
// first Record that needs it.
type slot struct {
	epoch   atomic.Int64
	count   atomic.Int64
	buckets [numBuckets]atomic.Uint64
}

// noEpoch marks a slot that has never held samples.
const noEpoch = math.MinInt64

// New returns an Estimator for cfg, or an error wrapping [ErrInvalidConfig].
func New(cfg Config) (*Estimator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Estimator{
		cfg:        cfg,
		slotWidth:  int64(cfg.Window) / numSlots,
		interval:   int64(cfg.Window) / refreshDivisor,
		minSamples: int64(cfg.MinimumSamples),
	}
	e.next.Store(math.MinInt64)
	e.staleFrom.Store(noEpoch)
	e.last.Store(noEpoch)
	for i := range e.slots {
		e.slots[i].epoch.Store(noEpoch)
	}
	return e, nil
}

// Config returns the configuration in use, with defaults filled in.
func (e *Estimator) Config() Config { return e.cfg }

// Record adds one sample, a latency d observed at now. It is lock-free and
// does not allocate.
//
// d below about 1µs (including 0 and negative values) counts as about 1µs;
// d above about 137s counts as about 137s. A sample whose now is older than
// the window already holds (a late report from a slow goroutine) is dropped.
//
// Record also keeps the cached [Estimator.Threshold] fresh: on every sample
// while the window holds fewer than MinimumSamples, so the threshold turns
// warm the moment the last sample needed lands, and once per Window/64
// otherwise, claimed by one compare-and-swap so that concurrent recorders do
// not all recompute. Given the same sequence of calls, the refreshes happen at
// the same points, which keeps simulations reproducible.
//
// Samples can be lost when the clock crosses into a new slot: the recorder
// that claims a stale slot zeroes it, and a sample another goroutine adds to
// that slot at the same moment may be zeroed with the old ones. This loses at
// most a few samples per slot width, which a quantile of a window does not
// notice, and avoids a lock on every sample. For the same reason a sample from
// a recorder a whole Window behind the others (descheduled between checking
// the slot and adding to it) can land in the slot's newer epoch; in practice
// concurrent recorders are microseconds apart, never a Window.
func (e *Estimator) Record(now time.Time, d time.Duration) {
	rel := e.offset(now)
	ep := floorDiv(rel, e.slotWidth)
	s := &e.slots[uint64(ep)%numSlots]
	for {
		cur := s.epoch.Load()
		if cur == ep {
			break
		}
		if cur > ep {
			if last := e.last.Load(); last != noEpoch && cur > last && ep > last-numSlots && uint64(cur)-uint64(ep) > numSlots {
				// The slot holds an epoch ahead of the latest sample's by more than a
				// Window (a stray time far ahead) and this sample is in the latest's
				// window: the stray is not, so the slot is this sample's. Kept, the
				// stray would drop a slot width of every Window until the clock caught
				// up with it. A sample just a Window late, which finds the present in
				// its slot, is dropped below: it must not empty the present's slot.
				if s.epoch.CompareAndSwap(cur, ep) {
					s.reset()
					break
				}
				continue
			}
			// The slot already holds a newer epoch: this sample is too old,
			// unless such samples keep coming for a whole Window: then they
			// are the clock (stepped back), and the window moves back to them.
			if cur-ep < numSlots {
				return
			}
			e.staleFrom.CompareAndSwap(noEpoch, ep)
			if from := e.staleFrom.Load(); from == noEpoch || ep-from < numSlots {
				return
			}
			for i := range e.slots {
				e.slots[i].epoch.Store(noEpoch)
			}
			e.warmEp.Store(math.MinInt64)
			e.staleFrom.Store(noEpoch)
			continue
		}
		if s.epoch.CompareAndSwap(cur, ep) {
			s.reset()
			break
		}
	}
	if e.staleFrom.Load() != noEpoch {
		e.staleFrom.Store(noEpoch)
	}
	if e.last.Load() != ep {
		e.last.Store(ep)
	}
	s.buckets[bucketOf(d)].Add(1)
	s.count.Add(1)

	if next := e.next.Load(); rel >= next || next-rel > e.interval {
		if e.next.CompareAndSwap(next, rel+e.interval) {
			e.refresh(ep)
		}
		return
	}
	if e.cached.Load()&okBit == 0 {
		e.refresh(ep)
	}
}

// Threshold returns the cached quantile (Config.Quantile) of the window and
// whether the window held at least MinimumSamples samples when it was
// computed. It is one atomic load, cheap enough for every call.
//
// The value is as fresh as the last refresh: Record refreshes it as samples
// arrive, so it can be stale only after a quiet spell with no samples. Call
// [Estimator.Refresh] to bring it up to date at a given time.
func (e *Estimator) Threshold() (time.Duration, bool) {
	w := e.cached.Load()
	return time.Duration(w &^ okBit), w&okBit != 0
}

// Refresh recomputes the cached threshold from the window at now. A window
// with fewer than MinimumSamples samples makes Threshold report (0, false).
func (e *Estimator) Refresh(now time.Time) {
	ep := floorDiv(e.offset(now), e.slotWidth)
	if e.countAt(ep) < e.minSamples {
		e.cached.Store(0) // as documented, also for a time behind the last warm refresh
		return
	}
	e.refresh(ep)
}

func (e *Estimator) refresh(ep int64) {
	if e.countAt(ep) < e.minSamples {
		if ep < e.warmEp.Load() && e.cached.Load()&okBit != 0 {
			return // a late sample's window is not the newest: keep the newest's answer
		}
		e.cached.Store(0)
		return
	}
	e.warmEp.Store(ep)
	var counts [numBuckets]uint64
	total := e.sumAt(ep, &counts)
	if total == 0 {
		e.cached.Store(0)
		return
	}
	e.cached.Store(okBit | uint64(quantileOf(&counts, total, e.cfg.Quantile)))
}

// Quantile computes the q-quantile of the samples in the window at now. It
// sums every bucket of the window, so it is slower than Threshold; use it for
// reports and for quantiles other than the configured one.
//
// ok reports whether the window holds at least MinimumSamples samples. With
// fewer (but at least one) the estimate is still returned, with ok false.
// q below 0 counts as 0 and above 1 as 1; an empty window or a NaN q
// returns (0, false).
func (e *Estimator) Quantile(now time.Time, q float64) (time.Duration, bool) {
	if math.IsNaN(q) {
		return 0, false
	}
	q = min(max(q, 0), 1)
	p := e.base.Load()
	if p == nil {
		return 0, false
	}
	ep := floorDiv(int64(now.Sub(*p)), e.slotWidth)
	var counts [numBuckets]uint64
	total := e.sumAt(ep, &counts)
	if total == 0 {
		return 0, false
	}
	return quantileOf(&counts, total, q), total >= uint64(e.minSamples)
}

// Count returns how many samples the window holds at now.
func (e *Estimator) Count(now time.Time) int {
	p := e.base.Load()
	if p == nil {
		return 0
	}
	return int(e.countAt(floorDiv(int64(now.Sub(*p)), e.slotWidth)))
}

// live reports whether a slot holding epoch is inside the window that ends in
// epoch ep.
func live(epoch, ep int64) bool {
	return epoch <= ep && epoch > ep-numSlots
}

func (e *Estimator) countAt(ep int64) int64 {
	var n int64
	for i := range e.slots {
		s := &e.slots[i]
		if live(s.epoch.Load(), ep) {
			n += s.count.Load()
		}
	}
	return n
}

func (e *Estimator) sumAt(ep int64, counts *[numBuckets]uint64) uint64 {
	var total uint64
	for i := range e.slots {
		s := &e.slots[i]
		if !live(s.epoch.Load(), ep) {
			continue
		}
		for b := range s.buckets {
			c := s.buckets[b].Load()
			counts[b] += c
			total += c
		}
	}
	return total
}

// offset returns now as nanoseconds after the Estimator's base time, setting
// the base on first use.
func (e *Estimator) offset(now time.Time) int64 {
	p := e.base.Load()
	if p == nil {
		if e.slotWidth == 0 {
			panic("latency: Estimator used without New")
		}
		t := now
		e.base.CompareAndSwap(nil, &t)
		p = e.base.Load()
	}
	d := now.Sub(*p)
	if d == math.MaxInt64 || d == math.MinInt64 {
		// 292 years or more from the base (a zero time.Time, a stray): start
		// over with now as the base.
		t := now
		if e.base.CompareAndSwap(p, &t) {
			for i := range e.slots {
				e.slots[i].epoch.Store(noEpoch)
			}
			e.next.Store(math.MinInt64)
			e.last.Store(noEpoch)
			e.warmEp.Store(0)
			e.cached.Store(0)
		}
		d = now.Sub(*e.base.Load())
	}
	return int64(d)
}

func (s *slot) reset() {
	for i := range s.buckets {
		s.buckets[i].Store(0)
	}
	s.count.Store(0)
}

// floorDiv divides rounding towards negative infinity, so that times before
// the base fall into their own slots rather than sharing slot 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// bucketOf returns the bucket that counts d.
func bucketOf(d time.Duration) int {
	if d < minValue {
		return 0
	}
	if d >= maxValue {
		return numBuckets - 1
	}
	v := uint64(d)
	k := bits.Len64(v) - 1 // 2^k <= v < 2^(k+1)
	sub := int(v>>(k-subBucketBits)) & (subBuckets - 1)
	return (k-minExp)<<subBucketBits | sub
}

// bucketBounds returns the lower bound and width of bucket b in nanoseconds.
func bucketBounds(b int) (lower, width float64) {
	k := b>>subBucketBits + minExp
	sub := b & (subBuckets - 1)
	w := uint64(1) << (k - subBucketBits)
	return float64(uint64(1)<<k + uint64(sub)*w), float64(w)
}

// quantileOf returns the q-quantile of a histogram with total > 0 samples,
// interpolating linearly inside the bucket where the rank falls, as if the
// bucket's samples were spread evenly across it. It is monotone in q.
func quantileOf(counts *[numBuckets]uint64, total uint64, q float64) time.Duration {
	rank := q * float64(total)
	var cum float64
	last := 0
	for b, c := range counts {
		if c == 0 {
			continue
		}
		last = b
		n := float64(c)
		if cum+n >= rank {
			lower, width := bucketBounds(b)
			frac := (rank - cum) / n
			return time.Duration(math.Round(lower + min(max(frac, 0), 1)*width))
		}
		cum += n
	}
	// Rounding left rank above the total: the top of the last bucket.
	lower, width := bucketBounds(last)
	return time.Duration(lower + width)
}
