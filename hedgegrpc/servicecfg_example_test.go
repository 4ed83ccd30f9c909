package hedgegrpc_test

import (
	"fmt"
	"log"

	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgegrpc"
)

// A service config written for grpc-java's hedging works unchanged: ConfigFromServiceConfig
// reads its hedgingPolicy, retryPolicy and retryThrottling, and the Interceptor built from it
// (installed with DialOptions) hedges the same methods the same way. A config without
// retryThrottling sets no bound on copies, as in A6; add the library's budget to bound them.
func ExampleConfigFromServiceConfig() {
	cfg, err := hedgegrpc.ConfigFromServiceConfig(`{
	  "methodConfig": [{
	    "name": [{"service": "grpc.health.v1.Health", "method": "Check"}],
	    "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}
	  }]
	}`)
	if err != nil {
		log.Fatal(err)
	}
	check := cfg.Methods["/grpc.health.v1.Health/Check"]
	check.Budget = budget.Config{} // no retryThrottling: bound copies to 10 % of calls
	cfg.Methods["/grpc.health.v1.Health/Check"] = check
	hi, err := hedgegrpc.NewInterceptor(cfg)
	if err != nil {
		log.Fatal(err)
	}
	_ = hi.DialOptions() // pass them to grpc.NewClient
	fmt.Println(check.Trigger, check.Attempts, cfg.Idempotent)
	// Output: after 50ms 3 [/grpc.health.v1.Health/Check]
}
