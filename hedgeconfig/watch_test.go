package hedgeconfig_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"net"

	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/hedgegrpc"
	"github.com/hedgekit/hedge/hedgehttp"
)

// writeFile replaces the file at path with content, as a deployment does: a new file
// renamed over the old one, so a reader sees one or the other.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The files of TestWatchDrivesTransport: v1 does not hedge the host, v2 hedges it at its
// 0.95 quantile, v3 changes only the budget of /learn, v4 is broken.
const (
	learnOp = `
  127.0.0.1/learn:
    trigger: quantile 0.95 minimum_in_service=off minimum_samples=5
    budget: {ratio: %s}
`
	watchV1 = "defaults:\n  trigger: none\noperations:" + learnOp
	watchV2 = "defaults:\n  trigger: quantile 0.95 minimum_in_service=off minimum_samples=5\n  budget: {ratio: 1}\noperations:" + learnOp
	watchV4 = "defaults:\n  trigger: quantile 2\n"
)

func version(v, ratio string) string { return strings.Replace(v, "%s", ratio, 1) }

// A running hedgehttp client follows its file: from trigger none to quantile 0.95, keeping
// its policies' thresholds across a reload that only changes a budget, and running on when
// the file breaks, with the error reported.
func TestWatchDrivesTransport(t *testing.T) {
	checkGoroutines(t)
	var slowCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" && r.Header.Get(hedgehttp.AttemptHeader) == "" {
			slowCalls.Add(1)
			select { // the primary of /slow answers late, or loses
			case <-time.After(200 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "primary")
			return
		}
		if r.Header.Get(hedgehttp.AttemptHeader) != "" {
			io.WriteString(w, "hedge")
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, version(watchV1, "0.1"))
	var mu sync.Mutex
	var reported []error
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1, OnReload: func(_ *hedgeconfig.File, err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := &http.Transport{}
	defer next.CloseIdleConnections()
	tr, err := w.NewTransport(hedgehttp.Config{Next: next})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return readAll(t, resp)
	}
	hostKey, learnKey := "http://"+srv.Listener.Addr().String(), "127.0.0.1/learn"

	// v1: the host is not hedged; /learn learns its latency.
	for range 10 {
		get("/learn")
		get("/fast")
	}
	if got := get("/slow"); got != "primary" {
		t.Fatalf("v1 (trigger none): %q, want the primary's late answer", got)
	}
	learnt := tr.Policy(learnKey).Measured()
	if !learnt.Warm {
		t.Fatalf("/learn did not learn a threshold: %+v", learnt)
	}

	// v2: the host hedges at its 0.95 quantile once it has learnt it.
	writeFile(t, path, version(watchV2, "0.1"))
	learnPolicy := tr.Policy(learnKey)
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if tr.Policy(learnKey) != learnPolicy {
		t.Error("v2 changed only the defaults, yet /learn has a new policy")
	}
	for range 10 {
		get("/fast")
	}
	if got := get("/slow"); got != "hedge" {
		t.Errorf("v2 (quantile 0.95): %q, want the hedge's answer", got)
	}
	if m := tr.Policy(hostKey).Measured(); m.HedgesWon != 1 {
		t.Errorf("v2: host policy %+v, want one hedge won", m)
	}

	// v3: only /learn's budget changes: a new policy, with the threshold it had learnt.
	writeFile(t, path, version(watchV2, "0.2"))
	hostPolicy := tr.Policy(hostKey)
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if p := tr.Policy(learnKey); p == learnPolicy {
		t.Error("v3 changed /learn's budget, yet its policy is the old one")
	} else if m := p.Measured(); !m.Warm || m.Threshold != learnt.Threshold {
		t.Errorf("v3: /learn threshold %v (warm %v), want the %v it had learnt", m.Threshold, m.Warm, learnt.Threshold)
	}
	if tr.Policy(hostKey) != hostPolicy {
		t.Error("v3 left the defaults as they were, yet the host has a new policy")
	}

	// v4: broken. The running file stays, the client runs on, the error is reported once.
	running := w.File()
	writeFile(t, path, watchV4)
	err = w.Reload()
	var fe *hedgeconfig.Error
	if !errors.Is(err, hedgeconfig.ErrInvalid) || !errors.As(err, &fe) || fe.Line != 2 {
		t.Errorf("v4: Reload = %v, want an *Error at line 2", err)
	}
	if w.File() != running || tr.Policy(hostKey) != hostPolicy {
		t.Error("v4: the broken file replaced the running configuration")
	}
	if got := get("/slow"); got != "hedge" {
		t.Errorf("v4: %q, want the running configuration's hedge", got)
	}
	if err := w.Reload(); !errors.Is(err, hedgeconfig.ErrInvalid) {
		t.Errorf("v4 again: %v, want the same error", err)
	}
	s := w.Status()
	mu.Lock()
	n := len(reported)
	mu.Unlock()
	if s.Reloads != 2 || s.Failures != 1 || !errors.Is(s.Err, hedgeconfig.ErrInvalid) || n != 3 {
		t.Errorf("status %+v, %d reports; want 2 reloads, 1 failure reported once (3 reports)", s, n)
	}

	// Fixed: the error clears.
	writeFile(t, path, version(watchV2, "0.3"))
	if err := w.Reload(); err != nil || w.Status().Err != nil {
		t.Errorf("fixed: %v, status %v", err, w.Status().Err)
	}
	if slowCalls.Load() != 3 {
		t.Errorf("%d calls to /slow, want 3", slowCalls.Load())
	}
}

// With an Interval, the watcher polls the file; Stop ends the polling (the bubble fails the
// test on a goroutine left behind).
func TestWatchPolls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  trigger: none\n")
	synctest.Test(t, func(t *testing.T) {
		var reloads atomic.Int32
		var self atomic.Pointer[hedgeconfig.Watcher]
		w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: time.Second, OnReload: func(*hedgeconfig.File, error) {
			reloads.Add(1)
			if st := self.Load().Status(); st.Reloads != 1 { // OnReload may read the watcher
				t.Errorf("status in OnReload: %+v", st)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		self.Store(w)
		defer w.Stop()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if reloads.Load() != 0 {
			t.Errorf("%d reloads of a file that did not change", reloads.Load())
		}
		writeFile(t, path, "defaults:\n  trigger: after 20ms\n")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := w.File().Defaults.Policy.Trigger.String(); got != "after 20ms" || reloads.Load() != 1 {
			t.Errorf("after a tick: trigger %q after %d reloads, want after 20ms after 1", got, reloads.Load())
		}
		w.Stop()
		if err := w.Reload(); !errors.Is(err, hedgeconfig.ErrStopped) {
			t.Errorf("Reload after Stop: %v", err)
		}
	})
}

// Watch refuses a file that is invalid from the start.
func TestWatchInvalidAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, watchV4)
	if _, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1}); !errors.Is(err, hedgeconfig.ErrInvalid) {
		t.Errorf("Watch = %v, want ErrInvalid", err)
	}
	if _, err := hedgeconfig.Watch(filepath.Join(t.TempDir(), "missing.yaml"), hedgeconfig.WatchConfig{Interval: -1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Watch of a missing file = %v", err)
	}
}

// A hedgegrpc interceptor follows the file through Follow and Reconfigure.
func TestWatchDrivesGRPC(t *testing.T) {
	checkGoroutines(t)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const method = "/grpc.health.v1.Health/Check"
	writeFile(t, path, "operations:\n  "+method+":\n    trigger: after 40ms\n    idempotent: true\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	g := w.File().GRPC()
	ic, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{Policy: g.Policy, Methods: g.Methods, Idempotent: g.Idempotent})
	if err != nil {
		t.Fatal(err)
	}
	w.Follow(func(f *hedgeconfig.File) error {
		g := f.GRPC()
		return ic.Reconfigure(g.Policy, g.Methods, g.Idempotent)
	})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), append(ic.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check := func() {
		t.Helper()
		if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if m := ic.Measured()[method]; m.Threshold != 40*time.Millisecond {
		t.Fatalf("before: %+v", m)
	}
	writeFile(t, path, "operations:\n  "+method+":\n    trigger: after 25ms\n    idempotent: true\n")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	check()
	if m := ic.Measured()[method]; m.Threshold != 25*time.Millisecond {
		t.Errorf("after the reload: threshold %v, want 25ms", m.Threshold)
	}
}

// A change one follower refuses runs nowhere: every reader keeps the running file, the
// other followers are told it again, the refusal counts as a failure, and an
// unchanged file is not offered to the followers again.
func TestWatchFollowerRefusesChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  attempts: 2\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var told []int
	refusal := errors.New("this follower cannot run 3 attempts")
	w.Follow(func(f *hedgeconfig.File) error { told = append(told, f.Defaults.Policy.Attempts); return nil })
	w.Follow(func(f *hedgeconfig.File) error {
		if f.Defaults.Policy.Attempts == 3 {
			return refusal
		}
		return nil
	})
	writeFile(t, path, "defaults:\n  attempts: 3\n")
	if err := w.Reload(); !errors.Is(err, refusal) {
		t.Fatalf("Reload = %v, want the follower's refusal", err)
	}
	if a := w.File().Defaults.Policy.Attempts; a != 2 {
		t.Fatalf("after the refusal the running file has attempts %d, want 2", a)
	}
	if !slices.Equal(told, []int{3, 2}) {
		t.Fatalf("the first follower was told %v, want [3 2]: the change, then the running file again", told)
	}
	if st := w.Status(); st.Reloads != 0 || st.Failures != 1 || !errors.Is(st.Err, refusal) {
		t.Fatalf("Status = %+v, want no reload, one failure, the refusal", st)
	}
	if err := w.Reload(); !errors.Is(err, refusal) || len(told) != 2 {
		t.Fatalf("the same file again: %v, followers told %v", err, told)
	}
	writeFile(t, path, "defaults:\n  attempts: 4\n")
	if err := w.Reload(); err != nil || w.File().Defaults.Policy.Attempts != 4 {
		t.Fatalf("a change the followers take: %v, attempts %d", err, w.File().Defaults.Policy.Attempts)
	}
}

// Stop may be called from OnReload, on the polling goroutine, and from a follower, under the
// reload: it returns, and the polling ends (in a bubble: a Stop that waits for its own
// goroutine is a deadlock that fails the test).
func TestWatchStopFromCallbacks(t *testing.T) {
	for _, from := range []string{"OnReload", "follower"} {
		t.Run(from, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			writeFile(t, path, "defaults:\n  attempts: 2\n")
			synctest.Test(t, func(t *testing.T) {
				stopped := make(chan struct{})
				var w *hedgeconfig.Watcher
				cfg := hedgeconfig.WatchConfig{Interval: time.Second}
				if from == "OnReload" {
					cfg.OnReload = func(*hedgeconfig.File, error) { w.Stop(); close(stopped) }
				}
				w, err := hedgeconfig.Watch(path, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if from == "follower" {
					w.Follow(func(*hedgeconfig.File) error { w.Stop(); close(stopped); return nil })
				}
				writeFile(t, path, "defaults:\n  attempts: 3\n") // the next poll finds the change
				<-stopped
				w.Stop() // from here, it waits for the polling to end
				if err := w.Reload(); !errors.Is(err, hedgeconfig.ErrStopped) {
					t.Fatalf("Reload after Stop: %v", err)
				}
			})
		})
	}
}

// A follower that panics refuses the change as one that returns an error does: the running
// file stays, for every reader and every other follower (those after it are told it again
// too, as readers may have read the new file meanwhile), and the change is reported; none of
// it runs half applied.
func TestWatchFollowerPanics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  attempts: 2\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var told, after []int
	w.Follow(func(f *hedgeconfig.File) error { told = append(told, f.Defaults.Policy.Attempts); return nil })
	w.Follow(func(f *hedgeconfig.File) error {
		if f.Defaults.Policy.Attempts == 3 {
			panic("a follower's bug")
		}
		return nil
	})
	w.Follow(func(f *hedgeconfig.File) error { after = append(after, f.Defaults.Policy.Attempts); return nil })
	writeFile(t, path, "defaults:\n  attempts: 3\n")
	err = w.Reload()
	if err == nil || !strings.Contains(err.Error(), "a follower panicked: a follower's bug") {
		t.Fatalf("Reload = %v, want the follower's panic as an error", err)
	}
	if a := w.File().Defaults.Policy.Attempts; a != 2 {
		t.Errorf("readers run attempts %d, want the running 2", a)
	}
	if !slices.Equal(told, []int{3, 2}) || !slices.Equal(after, []int{2}) {
		t.Errorf("followers told %v and %v, want [3 2] and [2]", told, after)
	}
	if st := w.Status(); st.Failures != 1 || st.Err == nil {
		t.Errorf("Status = %+v, want the refusal counted", st)
	}
}

// A panic in OnReload on the polling goroutine does not end the process, and the polling
// goes on.
func TestWatchOnReloadPanicOnThePollingGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writeFile(t, path, "defaults:\n  attempts: 2\n")
		var calls atomic.Int32
		w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: time.Second, OnReload: func(*hedgeconfig.File, error) {
			calls.Add(1)
			panic("a callback's bug")
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for _, n := range []string{"3", "4"} {
			writeFile(t, path, "defaults:\n  attempts: "+n+"\n")
			time.Sleep(time.Second + time.Millisecond)
			synctest.Wait()
		}
		if a := w.File().Defaults.Policy.Attempts; a != 4 || calls.Load() != 2 {
			t.Errorf("attempts %d after %d OnReload calls, want 4 after 2", a, calls.Load())
		}
	})
}

// A follower may read Status, and add a follower, while the reload runs it. (Not in a
// bubble: a goroutine blocked on a mutex is not durably blocked, and the bubble would wait
// for ever where the test must fail.)
func TestWatchFollowerReadsStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  attempts: 2\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var seen []int
	w.Follow(func(*hedgeconfig.File) error {
		seen = append(seen, w.Status().Reloads)
		w.Follow(func(*hedgeconfig.File) error { return nil })
		return nil
	})
	writeFile(t, path, "defaults:\n  attempts: 3\n")
	done := make(chan error, 1)
	go func() { done <- w.Reload() }()
	select {
	case err := <-done:
		if err != nil || !slices.Equal(seen, []int{0}) {
			t.Errorf("Reload = %v with the follower seeing Reloads %v, want nil and [0]", err, seen)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Reload deadlocked: its follower read Status")
	}
}

// A Transport that NewTransport built and that was closed is let go: the watcher no longer
// refreshes it, and keeps no reference to it.
func TestWatchLetsClosedTransportsGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  attempts: 2\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var gone []weak.Pointer[hedgehttp.Transport]
	for range 3 {
		tr, err := w.NewTransport(hedgehttp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		gone = append(gone, weak.Make(tr))
	}
	kept, err := w.NewTransport(hedgehttp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	runtime.GC()
	runtime.GC()
	for i, p := range gone {
		if p.Value() != nil {
			t.Errorf("closed Transport %d is still held", i)
		}
	}
	writeFile(t, path, "defaults:\n  attempts: 3\n")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
}
