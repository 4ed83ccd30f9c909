package hedge

import "time"

// SetSchedulerProbe replaces the policy's reading of the scheduler latency (runtime/metrics)
// for a test. The policy must have been built with LocalSaturation set.
func SetSchedulerProbe(p *Policy, probe func() time.Duration) { p.sat.probe = probe }
