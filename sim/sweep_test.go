package sim

import (
	"os"
	"strings"
	"testing"
)

// sweepRuns returns the runs that the environment variable env lists, separated by
// semicolons, for a test that prints figures for the record; without env, it skips the test,
// saying what it would have printed.
func sweepRuns(t *testing.T, env, what string) []string {
	t.Helper()
	spec := os.Getenv(env)
	if spec == "" {
		t.Skipf("set %s to print %s", env, what)
	}
	return strings.Split(spec, ";")
}
