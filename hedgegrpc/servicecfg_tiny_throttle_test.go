package hedgegrpc

import (
	"errors"
	"strings"
	"testing"
)

// A retryThrottling whose maxTokens or tokenRatio is positive but under a thousandth passes
// A6's "> 0" and cannot work: the throttle counts tokens in thousandths, so a tokenRatio of
// 0.0001 gives back nothing on a success, and calls, once throttled, are sent once for
// good; a maxTokens of 0.0001 holds every call to one attempt from the start. Both are
// refused, naming the field.
func TestTinyRetryThrottlingIsRefused(t *testing.T) {
	const method = `"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.01s"}}]`
	for _, c := range []struct{ throttling, field string }{
		{`{"maxTokens":10,"tokenRatio":0.0001}`, "retryThrottling.tokenRatio"},
		{`{"maxTokens":0.0001,"tokenRatio":0.1}`, "retryThrottling.maxTokens"},
	} {
		cfg, err := ConfigFromServiceConfig(`{"retryThrottling":` + c.throttling + `,` + method + `}`)
		if errors.Is(err, ErrServiceConfig) && strings.Contains(err.Error(), c.field) {
			continue
		}
		if err != nil {
			t.Errorf("retryThrottling %s: %v, want an error naming %s", c.throttling, err, c.field)
			continue
		}
		th := cfg.a6.throttle
		for range 10 {
			th.failure()
		}
		for range 100000 {
			th.success()
		}
		t.Errorf("retryThrottling %s accepted; after 10 failures and 100000 successes throttled() = %v (tokens %d of %d), want an error naming %s",
			c.throttling, th.throttled(), th.tokens.Load(), th.max, c.field)
	}
	// The smallest figures that work are accepted.
	if _, err := ConfigFromServiceConfig(`{"retryThrottling":{"maxTokens":0.001,"tokenRatio":0.001},` + method + `}`); err != nil {
		t.Errorf("retryThrottling of a thousandth each: %v, want it accepted", err)
	}
}
