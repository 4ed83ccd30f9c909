package hedgeconfig_test

import (
	"path/filepath"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// Follow(nil), say a method value of an integration left unset, is ignored. Before, the nil
// follower was called at each change: its nil-pointer panic refused the change, so the
// watcher refused every change of the file from then on ("a follower panicked: runtime
// error: invalid memory address or nil pointer dereference"), and the followers after it
// never heard of one.
func TestFollowNilIsIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "defaults:\n  trigger: none\n")
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	w.Follow(nil)
	told := 0
	w.Follow(func(*hedgeconfig.File) error { told++; return nil })
	writeFile(t, path, "defaults:\n  trigger: quantile 0.9\n")
	if err := w.Reload(); err != nil {
		t.Errorf("Reload after Follow(nil): %v, want the change to run", err)
	}
	if s := w.Status(); s.Reloads != 1 || s.Err != nil || told != 1 {
		t.Errorf("after the change: status %+v, follower told %d times; want one reload, no error, told once", s, told)
	}
}
