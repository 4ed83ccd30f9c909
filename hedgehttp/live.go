package hedgehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/perkey"
	"github.com/hedgekit/hedge/replica"
)

// TriggerHeader, on a request given to a [Transport], sets the trigger of that one call in
// place of its host's ([hedge.WithTrigger]): "none" (or "off") sends it without hedges,
// "after 20ms" hedges it after 20ms, "quantile 0.99" at the 0.99 quantile of the latency its
// host's policy has learnt. Attempts, the budget and every gate still apply. The Transport
// removes the header before sending: it is a word from the caller to its own client, never
// seen by the server. A value that is none of these fails the request with an error wrapping
// [ErrTriggerHeader], so that a typo is not taken for the default. A trigger set on the
// request's context with hedge.WithTrigger wins over the header.
//
// Set it only from code you trust: a proxy that copies incoming headers to outgoing
// requests would let its clients choose how hard it hedges.
const TriggerHeader = "Hedge-Trigger"

// ErrTriggerHeader is wrapped by the error of a request whose [TriggerHeader] is invalid.
var ErrTriggerHeader = errors.New("hedgehttp: invalid " + TriggerHeader + " header")

// hostState is what a host's configuration gives it, replaced whole when the configuration
// changes (Transport.Refresh): requests load it once, so each runs under one policy.
type hostState struct {
	policy *hedge.Policy
	repeat hedge.Repeatability
	cfg    hedge.Config // as Policy or PolicyFor gave it, before this Transport's hooks

	// signals: the host's trigger reads start signals, and its attempts ask servers for them
	// and pass them on. A host's, not the Transport's: PolicyFor may give one host Tied and
	// another a quantile trigger, which neither asks nor listens, and pays nothing for it.
	signals bool
}

// hostState returns the state of the host named name under the current configuration,
// from its previous state old (nil for a new host), and whether it differs from old.
func (t *Transport) hostState(name string, old *hostState) (*hostState, bool, error) {
	pc, repeat := t.cfg.Policy, hedge.RepeatableDefault
	if t.cfg.PolicyFor != nil {
		pc, repeat = t.cfg.PolicyFor(name)
	}
	var prev *hedge.Policy
	var was hedge.Config
	if old != nil {
		prev, was = old.policy, old.cfg
	}
	p, changed, err := perkey.Rebuild(prev, was, pc, func(c hedge.Config) hedge.Config { return t.withHooks(name, c) })
	if err != nil {
		return nil, false, fmt.Errorf("%w: Config.PolicyFor(%q): %w", ErrConfig, name, err)
	}
	signals := t.signals || pc.Trigger.ReadsStartSignals()
	if !changed && old.repeat == repeat && old.signals == signals {
		return old, false, nil
	}
	return &hostState{policy: p, repeat: repeat, cfg: pc, signals: signals}, true, nil
}

// Refresh asks Config.PolicyFor again for every host called so far and gives each host
// whose configuration changed a new policy, at once for every host: how a Transport follows a
// configuration file that changes while it runs (hedgeconfig.Watch calls it). A host whose
// configuration is the same keeps its policy, and everything it learnt and counted; one whose
// configuration changed gets a policy that keeps its latency estimate when the trigger
// learns it the same way ([hedge.NewFrom]), while its budget, breaker and limit start afresh.
// Calls already running finish under the policy they started with; a host's replicas and
// their health stay. A host whose new configuration is invalid keeps its policy, and
// Refresh returns its error (wrapping [ErrConfig]) with those of the others. Without
// PolicyFor, Refresh does nothing: Policy is fixed at NewTransport.
func (t *Transport) Refresh() error {
	if t.cfg.PolicyFor == nil {
		return nil
	}
	return t.hosts.Update(func(name string, h *host) (*host, error) {
		st, changed, err := t.hostState(name, h.state.Load())
		if err == nil && changed {
			h.state.Store(st)
		}
		return h, err
	})
}

// withTriggerHeader returns the request to send for req, which carries a TriggerHeader,
// without it, and req's context with the trigger it names (unless one is set on it already).
func withTriggerHeader(req *http.Request) (*http.Request, context.Context, error) {
	ctx := req.Context()
	v := strings.TrimSpace(req.Header.Get(TriggerHeader))
	if v == "off" {
		v = "none"
	}
	var tr hedge.Trigger
	kind, _, _ := strings.Cut(v, " ")
	if kind != "none" && kind != "after" && kind != "quantile" {
		return nil, ctx, fmt.Errorf("%w: %q: want none, after <duration> or quantile <q>", ErrTriggerHeader, v)
	}
	if err := tr.UnmarshalText([]byte(v)); err != nil {
		return nil, ctx, fmt.Errorf("%w: %w", ErrTriggerHeader, err)
	}
	if _, set := hedge.TriggerFrom(ctx); !set {
		ctx = hedge.WithTrigger(ctx, tr)
	}
	sent := *req
	sent.Header = req.Header.Clone()
	delete(sent.Header, TriggerHeader)
	return sent.WithContext(ctx), ctx, nil
}

// poolForGroups is poolFor for Config.ReplicaGroups: the current pool when the groups have
// not changed, a new one that keeps the health of the addresses that stayed when they have.
// Groups the replica package refuses (an empty group, an address twice, a bad weight, weights
// with a balancer that cannot read them) are an error wrapping ErrConfig.
func (h *host) poolForGroups(groups []replica.Group, cfg replica.Config) (*replica.Pool, error) {
	if p := h.pool.Load(); p != nil && p.SameGroups(groups) {
		return p, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pool.Load()
	if p != nil && p.SameGroups(groups) {
		return p, nil
	}
	var err error
	if p == nil {
		p, err = replica.NewGroupedPool(groups, cfg)
	} else {
		p, err = p.WithGroups(groups)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: Config.ReplicaGroups(%q): %w", ErrConfig, h.name, err)
	}
	h.pool.Store(p)
	return p, nil
}
