package hedgegrpc

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
)

// BalancerName is the name under which the hedging balancer is registered with gRPC (when
// this package is imported). It round-robins over the resolved backends, like gRPC's
// round_robin, except that an attempt of a call made through an [Interceptor] never goes to a
// backend another attempt of the same call already used while another READY backend exists:
// a hedge that waits behind its own primary's slow backend cannot help. Select it with a
// service config, for example [ServiceConfig].
const BalancerName = "hedge_round_robin"

// ServiceConfig is a service config (JSON) that selects the [BalancerName] balancer, for
// grpc.WithDefaultServiceConfig.
const ServiceConfig = `{"loadBalancingConfig":[{"` + BalancerName + `":{}}]}`

func init() {
	balancer.Register(builder{})
}

type builder struct{}

func (builder) Name() string { return BalancerName }

// Build returns a balancer with one pick_first child per endpoint (gRPC's endpointsharding,
// as round_robin does), whose pickers it wraps with one that knows which backends each call
// has used.
func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	w := &ccWrapper{ClientConn: cc}
	return &hedgeBalancer{
		Balancer: endpointsharding.NewBalancer(w, opts, balancer.Get(pickfirst.Name).Build, endpointsharding.Options{}),
	}
}

type hedgeBalancer struct {
	balancer.Balancer
}

func (b *hedgeBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	// Health checks, when the service config asks for them, reach the pick_first children
	// this way (as in round_robin).
	return b.Balancer.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(s.ResolverState),
	})
}

// ccWrapper intercepts the children's aggregated state to install the hedging picker.
type ccWrapper struct {
	balancer.ClientConn
}

func (w *ccWrapper) UpdateState(s balancer.State) {
	var ready []readyBackend
	for _, c := range endpointsharding.ChildStatesFromPicker(s.Picker) {
		if c.State.ConnectivityState != connectivity.Ready || len(c.Endpoint.Addresses) == 0 {
			continue
		}
		ready = append(ready, readyBackend{addr: c.Endpoint.Addresses[0].Addr, picker: c.State.Picker})
	}
	if len(ready) == 0 {
		w.ClientConn.UpdateState(s) // nothing ready: endpointsharding's picker queues or fails picks
		return
	}
	p := &picker{ready: ready}
	p.next.Store(rand.Uint32())
	w.ClientConn.UpdateState(balancer.State{ConnectivityState: s.ConnectivityState, Picker: p})
}

type readyBackend struct {
	addr   string
	picker balancer.Picker
}

// picker round-robins over the READY backends and, for a call made through an Interceptor,
// skips the backends the call's other attempts used.
type picker struct {
	ready []readyBackend
	next  atomic.Uint32
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	n := p.next.Add(1)
	r, _ := info.Ctx.Value(routeKey{}).(*route)
	if r == nil || len(p.ready) == 1 {
		return p.ready[n%uint32(len(p.ready))].picker.Pick(info)
	}
	a, _ := hedge.AttemptFrom(info.Ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	pick := int(n % uint32(len(p.ready)))
	for k := range p.ready {
		j := (pick + k) % len(p.ready)
		if !r.usedByOther(a.Index, p.ready[j].addr) {
			pick = j
			break
		}
	}
	res, err := p.ready[pick].picker.Pick(info)
	if err == nil {
		r.use(a.Index, p.ready[pick].addr)
	}
	return res, err
}

// routeKey is the context key of a call's route.
type routeKey struct{}

// routeCtx carries a call's route in its context, for the balancer.
type routeCtx struct {
	context.Context
	route route
}

func (c *routeCtx) Value(key any) any {
	if key == (routeKey{}) {
		return &c.route
	}
	return c.Context.Value(key)
}

// route records which backend each attempt of one call was sent to. The picker reads and
// writes it under mu: attempts of one call pick concurrently.
type route struct {
	mu     sync.Mutex
	inline [2]routeEntry
	used   []routeEntry
}

type routeEntry struct {
	attempt int
	addr    string
}

// usedByOther reports whether an attempt other than k went to addr.
func (r *route) usedByOther(k int, addr string) bool {
	for _, e := range r.used {
		if e.attempt != k && e.addr == addr {
			return true
		}
	}
	return false
}

// use records that attempt k goes to addr (a new pick for the same attempt replaces the old).
func (r *route) use(k int, addr string) {
	for i := range r.used {
		if r.used[i].attempt == k {
			r.used[i].addr = addr
			return
		}
	}
	if r.used == nil {
		r.used = r.inline[:0]
	}
	r.used = append(r.used, routeEntry{k, addr})
}
