//go:build !race && amd64

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPublishedReferenceIsCurrent runs the simulation report exactly as the README's first
// command does (`scripts/hedgesim`, every default) and checks that docs/reference/report.json,
// which the README links as the reference sweep, is what this build writes, byte for byte: a
// change to the decision code that moves a figure must regenerate it (`scripts/hedgesim -out
// docs/reference`). Its server-assisted rows once stayed behind a change to the backlog gate.
//
// Full-size (200,000 calls a point, about 20 s on two cores), so without the race detector only;
// and on amd64 only, where the published file was made: other architectures may fuse a
// multiplication and an addition (the Go spec allows it), which moves the last bits of a float.
func TestPublishedReferenceIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size simulations")
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-out", dir}, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/reference/report.json is not what this build writes: regenerate it with `scripts/hedgesim -out docs/reference` (and check the README's tables against it)")
	}
}
