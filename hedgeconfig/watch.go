package hedgeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// ErrStopped is returned by [Watcher.Reload] after [Watcher.Stop].
var ErrStopped = errors.New("hedgeconfig: watcher stopped")

// WatchConfig configures a [Watcher]. The zero value checks the file every 5 seconds and
// reports nothing but through [Watcher.Status].
type WatchConfig struct {
	// Interval is how often the file is read to see whether it changed. 0 means 5s; negative
	// means never: the file changes only when [Watcher.Reload] is called (for example on
	// SIGHUP, or from a test).
	Interval time.Duration

	// OnReload, when not nil, is called after each change of the file's content has been
	// read: with err nil when the new file now runs (f), or with the reason the new content
	// was refused or could not be read, or a follower's error (f is then the file that keeps
	// running). A file that stays as it is is not reported again. It runs on the goroutine
	// that polls, or that called Reload, after the reload is done: it may read the
	// Watcher's File and Status. A panic in it on the polling goroutine is recovered and
	// dropped, as no goroutine the Watcher starts may crash the process; on the goroutine
	// that called Reload it reaches that caller.
	OnReload func(f *File, err error)
}

// Watcher keeps a policy file's configuration up to date with the file: each time the file's
// content changes, it is parsed and validated as [Load] does and, when valid, swapped in at
// once for every reader, then each follower ([Watcher.Follow]) is told (a follower that
// refuses it refuses it for all: the running file stays, as for an invalid one); when invalid, the
// running configuration stays, and the error is reported (WatchConfig.OnReload,
// [Watcher.Status]) until the file changes again. A file that cannot be read (removed,
// mid-rename) counts as invalid: the running configuration stays. Change the file by renaming
// a new one over it (as most editors and a Kubernetes ConfigMap volume do): a file rewritten in
// place can be read half written, and a half that happens to parse would run until the next poll.
//
// Built on it, a [hedgehttp.Transport] ([Watcher.HTTPConfig], [Watcher.NewTransport]) and a
// hedgegrpc interceptor (through Follow) follow the file without a restart, and the policy of
// an operation that still exists keeps what it learnt: one whose settings did not change
// keeps its policy (latency estimate, budget, breaker, limit, counters), one whose settings
// changed gets a new policy that keeps the latency estimate when its trigger learns it the
// same way ([hedge.NewFrom]). Requests are matched to operations by the running file, so an
// operation added by a reload applies to the next request; the policy of an operation that
// was removed is no longer used (it stays in memory: operations are a bounded set).
//
// Build it with [Watch] and stop it with [Watcher.Stop]. It is safe for concurrent use. A
// Watcher not built by Watch (the zero value) watches no file: Reload and NewTransport return
// an error wrapping [ErrStopped] that names Watch, and its other methods panic with a
// message that names Watch.
type Watcher struct {
	path    string
	cfg     WatchConfig
	cur     atomic.Pointer[File]
	mu      sync.Mutex // serialises reloads, and guards last, running and lastErr
	last    []byte     // the content last read, valid or not
	running []byte     // the content of the running file
	lastErr string     // the read error last reported, when the file could not be read
	// The followers and the status have locks of their own, apart from the reload's: a
	// follower may read Status, add a follower or close a Transport of NewTransport's (which
	// lets its follower go) while a reload runs it.
	fmu      sync.Mutex
	follow   []follower // under fmu, replaced (not changed in place) when one comes or goes
	nextID   int        // under fmu
	smu      sync.Mutex
	status   Status      // under smu
	stopped  atomic.Bool // set once, by Stop; read by reload under mu
	stopOnce sync.Once
	stop     chan struct{}
	finished chan struct{} // closed when the polling goroutine is gone; nil without one
	// callbacks counts the OnReload calls and the followers running: Stop called from one of
	// them cannot wait for the polling, which may be the very goroutine that runs it.
	callbacks atomic.Int32
}

// Status is what a [Watcher] has done, for a health page or a metric.
type Status struct {
	Loaded   time.Time // when the running file was read
	Reloads  int       // changes of the file swapped in, not counting the first load
	Failures int       // changes refused, and failures to read the file, each counted once
	Err      error     // why the last change was refused, or nil when the running file is the latest
}

// Watch loads the file at path and watches it for changes (see [Watcher]). An invalid file
// at the start is an error: there is no running configuration to keep.
func Watch(path string, cfg WatchConfig) (*Watcher, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	w := &Watcher{path: path, cfg: cfg, last: data, running: data, stop: make(chan struct{})}
	w.cur.Store(f)
	w.status.Loaded = time.Now()
	interval := cfg.Interval
	if interval == 0 {
		interval = 5 * time.Second
	}
	if interval > 0 {
		w.finished = make(chan struct{})
		go w.poll(interval)
	}
	return w, nil
}

// poll reloads the file every interval until Stop.
func (w *Watcher) poll(interval time.Duration) {
	defer close(w.finished)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.pollOnce()
		}
	}
}

// pollOnce is one reload of the polling goroutine, reported through OnReload and Status. A
// panic in OnReload is dropped here: it would end the process.
func (w *Watcher) pollOnce() {
	defer func() { _ = recover() }()
	w.Reload()
}

// follower is a function that Follow added, with the number that lets it go.
type follower struct {
	id int
	fn func(*File) error
}

// File returns the running configuration. Keep the result for one request at most: after
// a reload it is stale.
func (w *Watcher) File() *File {
	w.mustBeBuilt()
	return w.cur.Load()
}

// errNotBuilt is what Reload and NewTransport return on a Watcher that Watch did not build.
var errNotBuilt = fmt.Errorf("hedgeconfig: Watcher used without Watch: %w", ErrStopped)

// built reports whether Watch built w: it always makes the stop channel.
func (w *Watcher) built() bool { return w != nil && w.stop != nil }

// mustBeBuilt panics, naming Watch, on a Watcher that Watch did not build: its methods would
// fail on a nil file or channel with a message that names no cause.
func (w *Watcher) mustBeBuilt() {
	if !w.built() {
		panic(errNotBuilt.Error())
	}
}

// Status returns what the watcher has done so far.
func (w *Watcher) Status() Status {
	w.mustBeBuilt()
	w.smu.Lock()
	defer w.smu.Unlock()
	return w.status
}

// Reload reads the file now. It returns nil when what the file holds runs (its new content,
// or the running file's); otherwise the error (an [*Error] for invalid content, a read error,
// or the error of the follower that refused the change), which OnReload also receives, and
// the running configuration stays. A file unchanged since a refusal returns that refusal's
// error again (OnReload is not called again). After Stop it returns [ErrStopped].
func (w *Watcher) Reload() error {
	if !w.built() {
		return errNotBuilt
	}
	f, report, err := w.reload()
	if report && w.cfg.OnReload != nil {
		w.callbacks.Add(1)
		defer w.callbacks.Add(-1)
		w.cfg.OnReload(f, err) // outside the lock: it may read Status and File
	}
	return err
}

// reload is Reload under the lock: the file running after it, whether there is something
// new to report, and the error.
func (w *Watcher) reload() (f *File, report bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped.Load() {
		return w.cur.Load(), false, ErrStopped
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		if err.Error() == w.lastErr {
			return w.cur.Load(), false, err // reported already
		}
		w.lastErr, w.last = err.Error(), nil
		return w.refused(err)
	}
	w.lastErr = ""
	if w.last != nil && bytes.Equal(data, w.last) {
		return w.cur.Load(), false, w.Status().Err
	}
	w.last = data
	if bytes.Equal(data, w.running) {
		// The running file's content again, after a read failure or a refused change (a
		// file removed and put back, an edit undone): nothing to swap in or tell anyone,
		// only the error to clear. Counted as a reload, it would tell the followers again.
		w.smu.Lock()
		w.status.Err = nil
		w.smu.Unlock()
		return w.cur.Load(), true, nil
	}
	f, err = Parse(w.path, data)
	if err != nil {
		return w.refused(err)
	}
	// All or nothing: a change a follower refuses (a hedgegrpc interceptor that cannot run
	// it) does not run anywhere. Every other follower is told the running file again, those
	// after the refusing one too: while the followers ran, the new file was the one readers
	// read, and a Transport's host first called then took its policy from it. Every reader
	// goes on reading the running file.
	old := w.cur.Load()
	w.cur.Store(f)
	w.callbacks.Add(1)
	defer w.callbacks.Add(-1)
	w.fmu.Lock()
	follow := w.follow
	w.fmu.Unlock()
	for i, fl := range follow {
		if err := tell(fl.fn, f); err != nil {
			w.cur.Store(old)
			errs := []error{err}
			for j, back := range follow {
				if j == i {
					continue
				}
				if err := tell(back.fn, old); err != nil {
					errs = append(errs, fmt.Errorf("hedgeconfig: a follower refused the running file again: %w", err))
				}
			}
			return w.refused(errors.Join(errs...))
		}
	}
	w.running = data
	w.smu.Lock()
	w.status.Loaded, w.status.Err = time.Now(), nil
	w.status.Reloads++
	w.smu.Unlock()
	return f, true, nil
}

// tell gives a follower f. A follower that panics refuses f, as one that returns an error
// does: a change half told, to some followers and not to those after, would run nowhere
// whole, and no later reload would offer the same content again.
func tell(fn func(*File) error, f *File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("hedgeconfig: a follower panicked: %v", r)
		}
	}()
	return fn(f)
}

// refused records a change that does not run, for Reload to report.
func (w *Watcher) refused(err error) (*File, bool, error) {
	w.smu.Lock()
	w.status.Failures++
	w.status.Err = err
	w.smu.Unlock()
	return w.cur.Load(), true, err
}

// Follow calls fn with the new file after every change swapped in, in the order followers
// were added: how an integration that cannot read the watcher on each call follows it. A
// hedgegrpc interceptor follows with
//
//	w.Follow(func(f *hedgeconfig.File) error {
//		g := f.GRPC()
//		return interceptor.Reconfigure(g.Policy, g.Methods, g.Idempotent)
//	})
//
// fn runs with reloads held off, and must not call Reload (it may read File and Status, and
// add followers, which hear from the next change on). An error, or a panic, refuses the
// change: the file that was running stays (for every reader, and for every other follower,
// which is told it again: readers read the new file while the followers ran), and the error
// is reported as the reload's. A nil fn is ignored: called, it would refuse every change.
func (w *Watcher) Follow(fn func(*File) error) {
	w.mustBeBuilt()
	if fn == nil {
		return
	}
	w.addFollower(fn)
}

// addFollower adds fn to the followers and returns the number that unfollow takes.
func (w *Watcher) addFollower(fn func(*File) error) int {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	w.nextID++
	// A new slice: a reload in progress keeps the one it took.
	w.follow = append(w.follow[:len(w.follow):len(w.follow)], follower{id: w.nextID, fn: fn})
	return w.nextID
}

// unfollow lets the follower numbered id go.
func (w *Watcher) unfollow(id int) {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	w.follow = slices.DeleteFunc(slices.Clone(w.follow), func(f follower) bool { return f.id == id })
}

// Stop ends the polling and waits for it to end. Calls of Reload after it return
// [ErrStopped]; the running configuration stays readable. Stop may be called more than once,
// and from OnReload or a follower: while one runs it does not wait (the polling may be what
// runs it), and the polling ends once the reload in progress is over.
func (w *Watcher) Stop() {
	w.mustBeBuilt()
	w.stopOnce.Do(func() {
		w.stopped.Store(true)
		close(w.stop)
	})
	if w.finished != nil && w.callbacks.Load() == 0 {
		<-w.finished
	}
}

// HTTPConfig returns a [hedgehttp.Config] that runs the watched file as [File.HTTPConfig]
// runs a loaded one, each request matched by the file running when it is sent. A
// Transport built from it follows a change only once it is told to: use
// [Watcher.NewTransport], or Follow with the Transport's Refresh.
func (w *Watcher) HTTPConfig() hedgehttp.Config {
	w.mustBeBuilt()
	return hedgehttp.Config{
		Policy: w.File().Defaults.Policy,
		Key:    func(r *http.Request) string { return w.File().httpKey(r) },
		PolicyFor: func(key string) (hedge.Config, hedge.Repeatability) {
			return w.File().policyFor(key)
		},
	}
}

// NewTransport builds a [hedgehttp.Transport] that runs the watched file and follows its
// changes: cfg's Policy, Key and PolicyFor are replaced by [Watcher.HTTPConfig]'s; set Next,
// Replicas, Observer and the other transport fields as usual.
func (w *Watcher) NewTransport(cfg hedgehttp.Config) (*hedgehttp.Transport, error) {
	if !w.built() {
		return nil, errNotBuilt
	}
	h := w.HTTPConfig()
	cfg.Policy, cfg.Key, cfg.PolicyFor = h.Policy, h.Key, h.PolicyFor
	t, err := hedgehttp.NewTransport(cfg)
	if err != nil {
		return nil, err
	}
	id := w.addFollower(func(*File) error {
		if err := t.Refresh(); err != nil {
			return fmt.Errorf("hedgeconfig: refreshing a hedgehttp.Transport: %w", err)
		}
		return nil
	})
	// A closed Transport is let go: a service that builds one per tenant must not keep every
	// one it ever built, refreshing them all at each change.
	t.OnClose(func() { w.unfollow(id) })
	return t, nil
}

// policyFor is what File.HTTPConfig's PolicyFor gives key: its operation's policy, or the
// defaults' for a host no operation names.
func (f *File) policyFor(key string) (hedge.Config, hedge.Repeatability) {
	for i := range f.Operations {
		if op := &f.Operations[i]; op.Name == key {
			return op.Policy, op.Repeatable
		}
	}
	return f.Defaults.Policy, f.Defaults.Repeatable
}
