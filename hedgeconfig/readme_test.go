package hedgeconfig_test

import (
	"os"
	"regexp"
	"testing"
)

// The README shows testdata/policy.yaml, the file the tests load, round-trip, run through a
// hedgehttp.Transport and a gRPC interceptor, and hedgesim -config simulates: they must not
// drift apart.
func TestReadmeShowsTheExampleFile(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- policy: hedgeconfig/testdata/policy.yaml -->\\s*```yaml\\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no block marked <!-- policy: hedgeconfig/testdata/policy.yaml -->")
	}
	if string(m[1]) != string(file) {
		t.Errorf("README.md's example policy differs from testdata/policy.yaml; update one of them:\n%s", m[1])
	}
}
