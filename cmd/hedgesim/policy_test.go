package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/sim"
	"github.com/hedgekit/hedge/sim/report"
)

// The README's example policy file (hedgeconfig/testdata/policy.yaml, the same text).
const examplePolicy = "../../hedgeconfig/testdata/policy.yaml"

// -config runs exactly the policy the file gives the operation, beside "no hedge": the same
// points as a sweep of that hedge.Config.
func TestConfigRunsTheLoadedPolicy(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-config", examplePolicy, "-operation", "users.internal/v1/search",
		"-calls", "2000", "-seeds", "1", "-loads", "50,95", "-cancellation", "ignored", "-out", dir}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	const name = "users.internal/v1/search (policy.yaml)"
	if !strings.Contains(stdout.String(), "| "+name) || !strings.Contains(stdout.String(), "| no hedge") {
		t.Errorf("the tables lack the policy or no hedge:\n%s", stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got sim.Report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Points) != 4 {
		t.Fatalf("%d points, want 2 setups × 2 loads", len(got.Points))
	}

	f, err := hedgeconfig.Load(examplePolicy)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := f.Lookup("users.internal/v1/search")
	want, err := sim.Sweep(context.Background(), sim.SweepConfig{
		Calls: 2000, Seeds: []uint64{1}, Loads: []float64{50, 95}, Modes: []string{"ignored"},
		Setups: []string{"no hedge"}, Extra: []sim.Setup{{Name: name, Config: op.Policy}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wb bytes.Buffer
	if err := report.WriteJSON(&wb, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, wb.Bytes()) {
		t.Errorf("report.json differs from a sweep of the loaded policy:\n%s\nwant\n%s", b, wb.Bytes())
	}
	if i := slices.IndexFunc(got.Points, func(p sim.Point) bool { return p.Setup == name && p.HedgeRate > 0 }); i < 0 {
		t.Errorf("the loaded policy never hedged: %s", b)
	}
}

func TestConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("defaults:\n  trigger: quantile 1.5\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", examplePolicy, "-operation", "nowhere"},
			`-operation: ../../hedgeconfig/testdata/policy.yaml has no operation "nowhere"; it has: defaults, users.internal, users.internal/v1/search`},
		{[]string{"-config", bad}, bad + `:2:12: defaults.trigger: hedge: invalid config: trigger "quantile 1.5"`},
		{[]string{"-operation", "users.internal"}, "-operation needs -config"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr, false); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr\n%s\nwant %s", tc.args, stderr.String(), tc.want)
		}
	}
}

// -scorecard -config judges the file's policy against no hedge.
func TestConfigScorecard(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-scorecard", "-config", examplePolicy, "-operation", "users.internal/v1/search",
		"-families", "reference", "-calls", "2000", "-seeds", "1", "-loads", "50", "-cancellation", "ignored", "-out", dir}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "scorecard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Setup  string            `json:"setup"`
		Points []json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Setup != "users.internal/v1/search (policy.yaml)" || len(sc.Points) != 1 {
		t.Errorf("scorecard of %q with %d points:\n%s", sc.Setup, len(sc.Points), b)
	}
	var stderr2 bytes.Buffer
	if code := run(context.Background(), append(args, "-setups", "recommended"), &stdout, &stderr2, false); code != 2 ||
		!strings.Contains(stderr2.String(), "leave out -setups") {
		t.Errorf("-scorecard -config -setups: exit %d, %s", code, stderr2.String())
	}
}
