package hedgegrpc

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hedgekit/hedge"
)

// templates is the part of a Config that Reconfigure replaces.
type templates struct {
	policy     hedge.Config
	methods    map[string]hedge.Config
	idempotent []string
	// everyRepeatable: every method may be sent more than once, as a service config whose
	// default entry has a policy says (ConfigFromServiceConfig). Reconfigure's templates
	// have their Idempotent list alone.
	everyRepeatable bool
}

// Reconfigure replaces the interceptor's Policy, Methods and Idempotent while it runs, as a
// configuration file that changed asks (hedgeconfig.Watch calls it): every method called so
// far is given its new template at once, and methods called later are built from it. A
// method whose template is the same keeps its policy and everything it learnt and counted;
// one whose template changed gets a new policy that keeps its latency estimate when the
// trigger learns it the same way ([hedge.NewFrom]), while its budget, breaker and limit
// start afresh. Calls already running finish under the policy they started with. The
// arguments are checked as [NewInterceptor] checks them: on an error (wrapping [ErrConfig])
// nothing changes. A trigger that reads start signals is refused once [Interceptor.DialOptions]
// has left the start-signal stats handler out (no trigger read them then): on connections
// dialed with those options it would never see a signal. The maps and slices are copied: the caller may change them afterwards.
func (i *Interceptor) Reconfigure(policy hedge.Config, methods map[string]hedge.Config, idempotent []string) error {
	if !i.built() {
		return errUnbuilt.Err
	}
	tm := &templates{policy: policy, methods: maps.Clone(methods), idempotent: slices.Clone(idempotent)}
	if err := i.checkTemplates(tm); err != nil {
		return err
	}
	i.dialMu.Lock()
	defer i.dialMu.Unlock()
	if i.unsignalled && tm.readStartSignals(i) {
		return fmt.Errorf("%w: a trigger reads start signals, but DialOptions left the start-signal stats handler out (no trigger read them then): install the dial options by hand, grpc.WithStatsHandler(StatsHandler()) among them, to reconfigure to one", ErrConfig)
	}
	// Store first, then rebuild under the registry's writer lock: a method created meanwhile
	// is either built from tm or rebuilt from it below.
	i.templates.Store(tm)
	return i.methods.Update(func(name string, m *method) (*method, error) {
		return i.buildMethod(name, m)
	})
}

// readStartSignals reports whether a trigger of tm reads start signals, as i's hooks leave it.
func (tm *templates) readStartSignals(i *Interceptor) bool {
	if i.policyConfig("", tm.policy).Trigger.ReadsStartSignals() {
		return true
	}
	for key, pc := range tm.methods {
		if i.policyConfig(key, pc).Trigger.ReadsStartSignals() {
			return true
		}
	}
	return false
}

// checkTemplates applies NewInterceptor's rules to tm.
func (i *Interceptor) checkTemplates(tm *templates) error {
	for key := range tm.methods {
		if !validKey(key) {
			return fmt.Errorf("%w: Methods: key %q is not /pkg.Service/Method nor /pkg.Service/", ErrConfig, key)
		}
	}
	for _, key := range tm.idempotent {
		if !validKey(key) {
			return fmt.Errorf("%w: Idempotent: %q is not /pkg.Service/Method nor /pkg.Service/", ErrConfig, key)
		}
	}
	if err := i.policyConfig("", tm.policy).Validate(); err != nil {
		return fmt.Errorf("%w: Policy: %w", ErrConfig, err)
	}
	for key, pc := range tm.methods {
		if err := i.policyConfig(key, pc).Validate(); err != nil {
			return fmt.Errorf("%w: Methods[%q]: %w", ErrConfig, key, err)
		}
	}
	return nil
}
