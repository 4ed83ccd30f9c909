package hedgeconfig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// A policy file is one YAML document. The YAML parser reads the first document of its input
// and ignores the rest, so without a check of its own Parse would load a file that two
// deployments wrote one after the other (or that carries more after "...") as its first part
// alone: the operations of the second part, their breakers and limits, would be dropped
// without a word, which is what the empty-file check exists to prevent. A trailing "---"
// with nothing after it holds no policy and is allowed.
func TestParseRefusesASecondDocument(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
	}{
		{"two documents", "defaults:\n  trigger: after 20ms\n---\noperations:\n  a.example:\n    breaker: true\n", 3},
		{"text after the end marker", "defaults:\n  attempts: 2\n...\noperations: [\n", 0},
		{"two JSON objects", "{\"defaults\": {\"attempts\": 2}}\n{\"operations\": {\"a.example\": {\"limit\": true}}}\n", 0},
		{"an empty document before the policy", "---\n---\ndefaults:\n  attempts: 2\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := hedgeconfig.Parse("policy.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse loaded the first document alone: %d operations, defaults %+v", len(f.Operations), f.Defaults.Policy)
			}
			var e *hedgeconfig.Error
			if !errors.As(err, &e) || !errors.Is(err, hedgeconfig.ErrInvalid) || e.Line == 0 {
				t.Errorf("error %#v: want an *Error wrapping ErrInvalid with a line", err)
			}
			if tc.line != 0 && e != nil && e.Line != tc.line {
				t.Errorf("error %v at line %d, want line %d", err, e.Line, tc.line)
			}
		})
	}
	for _, src := range []string{
		"defaults:\n  attempts: 2\n---\n",
		"---\ndefaults:\n  attempts: 2\n...\n",
		"defaults:\n  attempts: 2\n---\n# nothing more\n",
	} {
		f, err := hedgeconfig.Parse("policy.yaml", []byte(src))
		if err != nil || f.Defaults.Policy.Attempts != 2 {
			t.Errorf("Parse(%q) = %v; want the one policy it holds", src, err)
		}
	}
	// The check does not change what an empty file says.
	if _, err := hedgeconfig.Parse("policy.yaml", []byte("---\n")); err == nil || !strings.Contains(err.Error(), "the file is empty") {
		t.Errorf("Parse(---) = %v, want the empty-file error", err)
	}
}
