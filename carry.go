package hedge

// NewFrom builds a policy from cfg, as [New] does, that keeps what old has learnt of its
// dependency's latency, for a policy whose configuration changes while the process runs (a
// reloaded file, see hedgeconfig.Watch): when old and the new policy both learn a threshold
// (AtQuantile, StartAware or Tied) from estimators of the same quantile, window and minimum
// samples, the new policy reads and feeds old's estimator, so its threshold is old's from
// its first call rather than cold for a window. Calls still running on old feed the same
// estimator, so nothing they measure is lost.
//
// Everything else starts afresh: the budget's tokens, the breaker's and the limit's state,
// the backlog and in-service evidence, the counters of [Policy.Measured]. A caller that can
// tell that nothing changed (the same configuration) should keep old instead. A nil old is
// [New].
func NewFrom(old *Policy, cfg Config) (*Policy, error) {
	p, err := New(cfg)
	if err != nil || old == nil || old.est == nil || p.est == nil {
		return p, err
	}
	if old.est.Config() == p.est.Config() {
		p.est = old.est
	}
	return p, nil
}
