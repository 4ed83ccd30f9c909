package hedgeconfig_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/hedgehttp"
)

// A Watcher not built by Watch (var w hedgeconfig.Watcher, &hedgeconfig.Watcher{}) watches no
// file. Its methods used to fail on nil fields: Stop with "close of nil channel",
// HTTPConfig and NewTransport on a nil pointer, Reload with "open : no such file or
// directory". Reload and NewTransport must return an error wrapping ErrStopped that names
// Watch, and the other methods panic with a message that names Watch.
func TestZeroWatcherNamesWatch(t *testing.T) {
	panicOf := func(f func()) (msg string) {
		defer func() {
			if v := recover(); v != nil {
				msg = fmt.Sprint(v)
			}
		}()
		f()
		return ""
	}
	for name, f := range map[string]func(w *hedgeconfig.Watcher){
		"Stop":       func(w *hedgeconfig.Watcher) { w.Stop() },
		"HTTPConfig": func(w *hedgeconfig.Watcher) { w.HTTPConfig() },
		"File":       func(w *hedgeconfig.Watcher) { w.File() },
		"Status":     func(w *hedgeconfig.Watcher) { w.Status() },
		"Follow":     func(w *hedgeconfig.Watcher) { w.Follow(func(*hedgeconfig.File) error { return nil }) },
	} {
		if msg := panicOf(func() { f(&hedgeconfig.Watcher{}) }); !strings.HasPrefix(msg, "hedgeconfig:") || !strings.Contains(msg, "Watch") {
			t.Errorf("%s on a zero Watcher: panic %q, want a hedgeconfig: message naming Watch", name, msg)
		}
	}
	var w hedgeconfig.Watcher
	var err error
	if msg := panicOf(func() { err = w.Reload() }); msg != "" || !errors.Is(err, hedgeconfig.ErrStopped) || !strings.Contains(fmt.Sprint(err), "Watch") {
		t.Errorf("Reload on a zero Watcher: panic %q, error %v; want an error wrapping ErrStopped naming Watch", msg, err)
	}
	var tr *hedgehttp.Transport
	if msg := panicOf(func() { tr, err = w.NewTransport(hedgehttp.Config{}) }); msg != "" || tr != nil || !errors.Is(err, hedgeconfig.ErrStopped) {
		t.Errorf("NewTransport on a zero Watcher: panic %q, transport %v, error %v; want an error wrapping ErrStopped", msg, tr, err)
	}
}
