package hedgeconfig_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/hedgehttp"
)

// A service loads its hedging policies from a file and builds its HTTP client from it.
func ExampleLoad() {
	policies, err := hedgeconfig.Load("testdata/policy.yaml")
	if err != nil {
		log.Fatal(err) // e.g. testdata/policy.yaml:10:14: operations["users.internal"].trigger: ...
	}
	tr, err := hedgehttp.NewTransport(policies.HTTPConfig())
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	_ = client

	search, _ := http.NewRequest("POST", "http://users.internal/v1/search", nil)
	op := policies.ForHTTP(search)
	fmt.Println(op.Name, op.Policy.Trigger, op.Policy.Attempts, "repeatable:", op.Repeatable == hedge.Repeatable)
	fmt.Println(policies.ForMethod("/inventory.v1.Inventory/List").Name)
	// Output:
	// users.internal/v1/search after 40ms 3 repeatable: true
	// /inventory.v1.Inventory/
}

// Every error names the file, line, column and field.
func ExampleParse_error() {
	_, err := hedgeconfig.Parse("policy.yaml", []byte(`
defaults:
  trigger: quantile 0.95
operations:
  users.internal:
    budget: {ratio: 0.1, window: 10}
`))
	fmt.Println(err)
	// Output:
	// policy.yaml:6:34: operations["users.internal"].budget.window: must be a duration such as 20ms or 1m30s, got 10
}

// Marshal writes a file that loads back to the same policies: the defaults in full, and each
// operation where it differs from them.
func ExampleFile_Marshal() {
	policies, err := hedgeconfig.Parse("policy.yaml", []byte(`
defaults: {trigger: quantile 0.95, limit: true}
operations:
  search.internal/v2: {trigger: after 30ms, limit: false, idempotent: true}
`))
	if err != nil {
		log.Fatal(err)
	}
	out, _ := policies.Marshal()
	fmt.Print(string(out))
	// Output:
	// defaults:
	//   trigger: quantile 0.95
	//   limit: true
	// operations:
	//   search.internal/v2:
	//     trigger: after 30ms
	//     limit: false
	//     idempotent: true
}
