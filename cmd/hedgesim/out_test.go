package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -from reads a hedgesim report.json: other JSON decoded into an empty report and rendered
// one, with exit 0.
func TestFromRefusesOtherJSON(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.json":     "{}",
		"null.json":      "null",
		"scorecard.json": `{"setup": "recommended", "points": [{"family": "reference", "load_pct": 30, "cancellation": "ignored", "seed": 1, "holds": true}]}`,
		"nopoints.json":  `{"model": {"calls": 2000, "seeds": [1], "setups": ["no hedge"]}, "points": []}`,
		"stranger.json":  `{"model": {"calls": 2000, "seeds": [1], "setups": ["no hedge"]}, "points": [{"setup": "turbo", "seed": 1, "cancellation": "ignored"}]}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+name)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-from", path, "-out", out}, &stdout, &stderr, false)
		if code != 1 || !strings.Contains(stderr.String(), path+" is not a hedgesim report.json") {
			t.Errorf("-from %s: exit %d, stderr %q; want 1 and an error naming the file", name, code, stderr.String())
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("-from %s: -out %s left behind (%v)", name, out, err)
		}
	}
}

// An -out that cannot be written is a usage error found before the run, not after it: a run
// of minutes was lost to it.
func TestOutCheckedBeforeRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		smallRun,
		{"-scorecard", "-calls", "3000", "-seeds", "1", "-loads", "30", "-cancellation", "ignored", "-families", "reference"},
		{"-timeline", "-calls", "3000", "-seeds", "1", "-loads", "30", "-cancellation", "ignored", "-setups", "no hedge"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(args, "-out", filepath.Join(file, "sub")), &stdout, &stderr, true)
		if code != 2 || !strings.Contains(stderr.String(), "hedgesim: -out: ") {
			t.Errorf("%q under a file: exit %d, stderr %q; want 2 naming -out", args[0], code, stderr.String())
		}
		if strings.Contains(stderr.String(), "points ") || strings.Contains(stderr.String(), "runs ") || stdout.Len() > 0 {
			t.Errorf("%q: ran before checking -out: stdout %q, stderr %q", args[0], stdout.String(), stderr.String())
		}
	}
	// A good -out is created before the run and holds nothing but the report after it.
	out := filepath.Join(t.TempDir(), "a", "b")
	var stderr bytes.Buffer
	if code := run(context.Background(), append(smallRun, "-out", out), &bytes.Buffer{}, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 3 {
		t.Errorf("-out holds %d files after the run, want the report's 3", len(entries))
	}
}
