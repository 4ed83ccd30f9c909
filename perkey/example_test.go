package perkey_test

import (
	"fmt"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/perkey"
)

// dependency is what an integration keeps per key: here, the policy alone.
type dependency struct{ policy *hedge.Policy }

func (d *dependency) Policy() *hedge.Policy { return d.policy }

// An integration keeps one policy per dependency, built from its template on first use.
func ExampleRegistry() {
	var deps perkey.Registry[*dependency]
	get := func(name string) *dependency {
		d, err := deps.GetOrCreate(name, func() (*dependency, error) {
			p, err := hedge.New(hedge.Config{Trigger: hedge.AtQuantile(0.95)})
			return &dependency{p}, err
		})
		if err != nil {
			panic(err)
		}
		return d
	}
	a, b := get("users"), get("orders")
	fmt.Println(a == get("users"), a.policy == b.policy)
	fmt.Println(deps.Policy("users") == a.policy, deps.Policy("billing") == nil, len(deps.Measured()))
	// Output:
	// true false
	// true true 2
}
