package hedgegrpc

import (
	"testing"

	"github.com/hedgekit/hedge"
)

// Reconfigure replaces Idempotent, its doc says: on an Interceptor built from a service config
// whose default entry had a policy (every method repeatable), the new list alone says which
// methods may be sent twice, or a policy with a trigger would hedge every method.
func TestReconfigureDropsTheServiceConfigsRepeatability(t *testing.T) {
	cfg, err := ConfigFromServiceConfig(`{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.1s"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	hi := newInterceptor(t, cfg)
	if err := hi.Reconfigure(hedge.Config{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if m := hi.method("/pkg.Svc/Create"); m.repeatable {
		t.Errorf("after Reconfigure with no Idempotent entry and no policy, /pkg.Svc/Create is still repeatable (a6 defaultRepeatable survives)")
	}
}
