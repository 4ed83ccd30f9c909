package hedgeconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// The running file's content coming back after a read failure (the file removed and put
// back) or after a refused change (an edit undone) changes nothing: it clears the error and
// is reported as running, but is no reload (Status.Reloads counts changes swapped in) and
// tells no follower again.
func TestRunningContentAgainIsNoReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const running = "defaults:\n  attempts: 2\n"
	writeFile(t, path, running)
	var reports []error
	w, err := hedgeconfig.Watch(path, hedgeconfig.WatchConfig{Interval: -1, OnReload: func(_ *hedgeconfig.File, err error) {
		reports = append(reports, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	told := 0
	w.Follow(func(*hedgeconfig.File) error { told++; return nil })

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := w.Reload(); err == nil {
		t.Fatal("Reload of a removed file: no error")
	}
	writeFile(t, path, running)
	if err := w.Reload(); err != nil {
		t.Fatalf("Reload of the running content put back: %v", err)
	}
	writeFile(t, path, "defaults:\n  attempts: -2\n")
	if err := w.Reload(); err == nil {
		t.Fatal("Reload of an invalid file: no error")
	}
	writeFile(t, path, running)
	if err := w.Reload(); err != nil {
		t.Fatalf("Reload of the running content after a refused change: %v", err)
	}
	st := w.Status()
	if st.Reloads != 0 || st.Failures != 2 || st.Err != nil || told != 0 {
		t.Errorf("Status = %+v, followers told %d times; want no reload, 2 failures, no error, none told", st, told)
	}
	if len(reports) != 4 || reports[0] == nil || reports[1] != nil || reports[2] == nil || reports[3] != nil {
		t.Errorf("OnReload reports %v, want the two failures, each followed by nil", reports)
	}
	if a := w.File().Defaults.Policy.Attempts; a != 2 {
		t.Errorf("running attempts %d, want 2", a)
	}
}
