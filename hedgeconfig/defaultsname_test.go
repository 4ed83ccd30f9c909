package hedgeconfig_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// File.Lookup("defaults") is the defaults block (hedgesim -operation defaults simulates it),
// so an operation whose name is defaults, a host of that name, can never be looked up: it
// would load, run for requests to that host, and be simulated as the defaults. Parse refuses
// the name; the host is still reachable under a name in another case, since hosts match in
// any case.
func TestOperationNamedDefaultsIsRefused(t *testing.T) {
	f, err := hedgeconfig.Parse("policy.yaml", []byte("operations:\n  defaults:\n    attempts: 3\n"))
	var e *hedgeconfig.Error
	if !errors.As(err, &e) || e.Field != `operations["defaults"]` || e.Line != 2 {
		var looked any
		if f != nil {
			op, _ := f.Lookup("defaults")
			looked = op.Policy.Attempts
		}
		t.Fatalf("Parse = %v (Lookup(defaults) gives attempts %v, the operation says 3); want an error at operations[\"defaults\"]", err, looked)
	}
	f, err = hedgeconfig.Parse("policy.yaml", []byte("operations:\n  Defaults:\n    attempts: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest("GET", "http://defaults/x", nil)
	if op, ok := f.Lookup("Defaults"); !ok || op.Policy.Attempts != 3 || f.ForHTTP(r).Name != "Defaults" {
		t.Errorf("the operation Defaults: Lookup %v %v, ForHTTP %s", op.Policy.Attempts, ok, f.ForHTTP(r).Name)
	}
}
