package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim/report"
)

// WriteFiles writes a set of files whole or not at all: with one name taken by a directory,
// the earlier run's files stay as they were and no temporary file is left.
func TestWriteFilesAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	if err := report.WriteFiles(dir, map[string][]byte{"a.md": []byte("old a"), "c.json": []byte("old c")}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "b.html"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := report.WriteFiles(dir, map[string][]byte{"a.md": []byte("new a"), "b.html": []byte("new b"), "c.json": []byte("new c")})
	if err == nil || !strings.Contains(err.Error(), "b.html") {
		t.Fatalf("WriteFiles over a directory named b.html: %v, want an error naming it", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("%d entries after a failed write, want a.md, b.html and c.json alone: %v", len(entries), entries)
	}
	for name, want := range map[string]string{"a.md": "old a", "c.json": "old c"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q after a failed write, want the earlier %q", name, b, want)
		}
	}
	os.Remove(filepath.Join(dir, "b.html"))
	if err := report.WriteFiles(dir, map[string][]byte{"a.md": []byte("new a"), "b.html": []byte("new b")}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "b.html"))
	if b, _ := os.ReadFile(filepath.Join(dir, "b.html")); err != nil || string(b) != "new b" || fi.Mode().Perm() != 0o644 {
		t.Errorf("b.html = %q, %v (mode %v), want \"new b\" with mode 0644", b, err, fi.Mode())
	}
}

// PrepareDir creates what it needs and undoes it for a run that writes nothing; it refuses a
// path it cannot write into, leaving nothing behind.
func TestPrepareDir(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "x", "y")
	undo, err := report.PrepareDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Fatalf("PrepareDir did not create %s: %v", out, err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("PrepareDir left %v in %s", entries, out)
	}
	undo()
	if _, err := os.Stat(filepath.Join(base, "x")); !os.IsNotExist(err) {
		t.Errorf("undo left %s: %v", filepath.Join(base, "x"), err)
	}
	file := filepath.Join(base, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := report.PrepareDir(filepath.Join(file, "sub")); err == nil {
		t.Error("PrepareDir under a regular file: no error")
	}
}
