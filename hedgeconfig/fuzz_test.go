package hedgeconfig_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// FuzzParse: no input makes Parse panic; every error is an *Error wrapping ErrInvalid, with a
// line unless the file is empty; and
// every file that loads marshals to one that loads back the same.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		"defaults:\n  trigger: after 20ms\n  budget: {off: true}\n",
		`{"defaults": {"trigger": "quantile 0.99", "breaker": true}, "operations": {"/a.B/C": {"breaker": false}}}`,
		"operations:\n  a.example:8080/x/:\n    limit: {max_limit: 50}\n    idempotent: true\n",
		"defaults: &d\n  attempts: 3\noperations:\n  x.example: *d\n",
		"defaults:\n  trigger: tied tie_delay=off window=0s\n  breaker: {degraded_at: 1}\n  backoff: {jitter: -0.5}\n",
		"defaults:\n  trigger: quantile 1.5\n",
		"defaults:\n  trigger: start-aware 0.95 minimum_in_service=off backlog_ratio=1.2\n",
		"- a\n",
		"operations:\n  /s/:\n  /s/m: {}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := hedgeconfig.Parse("fuzz.yaml", data)
		if err != nil {
			var e *hedgeconfig.Error
			if !errors.As(err, &e) || !errors.Is(err, hedgeconfig.ErrInvalid) {
				t.Fatalf("error %v is not an *Error wrapping ErrInvalid", err)
			}
			if e.Line == 0 && !strings.Contains(e.Err.Error(), "the file is empty") {
				t.Fatalf("error %v names no line", err)
			}
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := hedgeconfig.Parse("marshalled.yaml", out)
		if err != nil {
			t.Fatalf("the marshalled file does not load: %v\n%s", err, out)
		}
		if !sameFile(file, again) {
			t.Fatalf("load → marshal → load changed the file:\n%s", out)
		}
	})
}
