package hedgegrpc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
)

// BalancerName is the name under which the hedging balancer is registered with gRPC (when
// this package is imported). It sends each call's first attempt to one of the READY backends
// by power of two choices (of two drawn at random, the one with fewer of this client's
// attempts outstanding, then the one whose latest load report ([Queue]) is lighter), and
// decides two more things by the core's package replica: an attempt of a call made
// through an [Interceptor] never goes to a backend another attempt of the same call already
// used while another fit backend exists (a hedge that waits behind its own primary's slow
// backend cannot help), and a backend that keeps failing (UNAVAILABLE, INTERNAL, UNKNOWN,
// DATA_LOSS, or a connection that never carried the request), or whose cancelled losers keep
// having run past the call's hedge threshold (replica.Slow: it swallows requests while hedges
// rescue its calls), is ejected for a while that grows each time, as in Envoy's outlier
// detection; a backend whose connection drops and comes back (a restart) comes back as it
// left, ejected and remembered, while the resolver lists it. Select it with a service config, for example
// [ServiceConfig]. Its one setting, {"oobReportInterval":"0.05s"}, opens an ORCA out-of-band
// load report stream to every backend ([Config.LoadReportInterval] writes it;
// [Queue.RegisterOOB] serves it), so that first attempts and hedges weigh every backend's
// load, not only that of the backends this client's calls reached; without it the balancer
// reads the per-call reports alone. The name stays from when first attempts took turns, so
// that service configs written for it keep working.
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
		w:        w,
	}
}

// Close closes the children and stops the out-of-band listeners (oob.go).
func (b *hedgeBalancer) Close() {
	b.Balancer.Close()
	b.w.stopOOB()
}

type hedgeBalancer struct {
	balancer.Balancer
	w *ccWrapper
}

func (b *hedgeBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if c, ok := s.BalancerConfig.(*lbConfig); ok {
		// SubConns created from now on listen at this interval (oob.go); those that exist
		// keep theirs.
		b.w.oobInterval.Store(int64(c.oob))
	}
	// Health checks, when the service config asks for them, reach the pick_first children
	// this way (as in round_robin).
	return b.Balancer.UpdateClientConnState(balancer.ClientConnState{
		ResolverState: pickfirst.EnableHealthListener(s.ResolverState),
	})
}

// ccWrapper intercepts the children's aggregated state to install the hedging picker. It
// keeps the replicas' health (replica.Pool) across picker updates. grpc calls UpdateState
// from one goroutine at a time.
type ccWrapper struct {
	balancer.ClientConn
	pool *replica.Pool
	// left is, for each backend the resolver still lists that is out of the pool (only READY
	// backends are in it: its connection dropped), the pool it was last in. One that comes
	// back takes its health from there (replica.Pool.With): a backend that fails, restarts and
	// fails again is ejected, for longer each time, instead of coming back with a clean slate.
	left map[string]*replica.Pool
	oobState
}

func (w *ccWrapper) UpdateState(s balancer.State) {
	var ready []readyBackend
	known := map[string]bool{} // every backend the resolver lists, READY or not
	for _, c := range endpointsharding.ChildStatesFromPicker(s.Picker) {
		if len(c.Endpoint.Addresses) > 0 {
			known[c.Endpoint.Addresses[0].Addr] = true
		}
		if c.State.ConnectivityState != connectivity.Ready || len(c.Endpoint.Addresses) == 0 {
			continue
		}
		g, has := groupOf(c.Endpoint)
		addr := c.Endpoint.Addresses[0].Addr
		ready = append(ready, readyBackend{addr: addr, picker: c.State.Picker, group: g, hasGroup: has, load: w.loadFor(c.Endpoint.Addresses)})
	}
	ready = firstOfEachAddr(ready)
	if len(ready) == 0 {
		// Nothing ready: endpointsharding's picker queues or fails picks.
		w.install(nil)
		w.ClientConn.UpdateState(balancer.State{ConnectivityState: s.ConnectivityState, Picker: unreadyPicker{s.Picker}})
		return
	}
	earlier := w.comeback(ready, known)
	if groups := groupsOf(ready); groups != nil && w.updateGroupedPool(groups, earlier) {
		p := newPicker(ready, w.pool)
		w.install(p)
		w.ClientConn.UpdateState(balancer.State{ConnectivityState: s.ConnectivityState, Picker: p})
		return
	}
	// A stable order, so that a backend keeps its place (and its health) across updates.
	slices.SortFunc(ready, func(a, b readyBackend) int { return strings.Compare(a.addr, b.addr) })
	addrs := make([]string, len(ready))
	for i, r := range ready {
		addrs[i] = r.addr
	}
	switch {
	case w.pool == nil:
		// First attempts go by power of two choices (of two READY backends drawn at random,
		// the one with fewer of this client's attempts outstanding, then the lighter report;
		// replica.Set.ReportLoad). A client that sees a thin slice of the traffic learns from
		// the reports what the other clients have sent each backend: from every backend's
		// out-of-band reports when they are on, from the per-call reports of the backends its
		// own calls went to otherwise. Taking turns, as gRPC's round_robin does, sees neither
		// (BENCHMARKS.md, the twelfth round: a fleet's p99 at 70 % load, 0.45× of no hedge's
		// by p2c on per-call reports, 0.55× in turn).
		w.pool, _ = replica.NewPool(addrs, replica.Config{Balancer: replica.P2C}) // a valid config, addrs not empty
	case w.pool.Layout() != nil || !w.pool.Same(addrs): // groups before, or other backends
		w.pool, _ = w.pool.With(addrs, earlier...) // the backends that stay, or come back, keep their health
	}
	p := newPicker(ready, w.pool)
	w.install(p)
	w.ClientConn.UpdateState(balancer.State{ConnectivityState: s.ConnectivityState, Picker: p})
}

// comeback notes, of the backends in the pool in use, those that ready leaves out and the
// resolver still lists (known), with that pool, and returns the pools that those of ready the
// pool in use lacks were last in, for replica.Pool.With. A backend the resolver no longer
// lists is forgotten.
func (w *ccWrapper) comeback(ready []readyBackend, known map[string]bool) []*replica.Pool {
	if w.pool == nil {
		return nil
	}
	for a := range w.left {
		if !known[a] {
			delete(w.left, a)
		}
	}
	in := make(map[string]bool, len(ready))
	for _, r := range ready {
		in[r.addr] = true
	}
	for i := range w.pool.Len() {
		if a := w.pool.Addr(i); !in[a] && known[a] {
			if w.left == nil {
				w.left = map[string]*replica.Pool{}
			}
			w.left[a] = w.pool
		}
	}
	var earlier []*replica.Pool
	for _, r := range ready {
		if e, ok := w.left[r.addr]; ok {
			if !slices.Contains(earlier, e) {
				earlier = append(earlier, e)
			}
			delete(w.left, r.addr)
		}
	}
	return earlier
}

// firstOfEachAddr keeps, of READY backends that share a first address, the first one listed.
// The core's replica choice knows a backend by that address: two endpoints that share it (a
// resolver may list an address in more than one) are one replica to it, and a pool refuses an
// address twice (replica.NewPool), since a hedge could go back to the address its primary
// used while another backend is unused. It runs on each state update, not on each pick.
func firstOfEachAddr(ready []readyBackend) []readyBackend {
	seen := make(map[string]bool, len(ready))
	return slices.DeleteFunc(ready, func(r readyBackend) bool {
		dup := seen[r.addr]
		seen[r.addr] = true
		return dup
	})
}

type readyBackend struct {
	addr     string
	picker   balancer.Picker
	group    groupAttr // see InGroup
	hasGroup bool
	load     *backendLoad // its out-of-band reports (oob.go); nil when none are asked for
}

// picker sends each attempt to a READY backend chosen by the core's replica choice
// (power of two choices, skipping backends that outlier detection ejected) and, for a call made
// through an Interceptor, to one the call's other attempts have not used, while there is one.
// Each attempt's result feeds outlier detection.
type picker struct {
	ready []readyBackend
	pool  *replica.Pool // replica i is ready[i]
	oob   bool          // some backend has out-of-band reports
	state *oobState     // the balancer's (install); nil in tests that build a picker alone
}

func newPicker(ready []readyBackend, pool *replica.Pool) *picker {
	p := &picker{ready: ready, pool: pool}
	for _, r := range ready {
		p.oob = p.oob || r.load != nil
	}
	return p
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	r, _ := info.Ctx.Value(routeKey{}).(*route)
	k := attemptIndex(info.Ctx)
	var buf [4]int
	used := buf[:0]
	if r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.used {
			if e.attempt != k {
				if j := p.pool.Index(e.addr); j >= 0 {
					used = append(used, j)
				}
			}
		}
	}
	set := p.pool.Set()
	now := time.Now()
	if p.oob && r != nil && r.policy != nil && (p.state == nil || !p.state.watch(now, p, r.policy)) {
		p.feedOOB(now, set, r.policy) // a policy the balancer does not watch: fed at its picks
	}
	i, _ := p.pool.Pick(now, used) // by group and weight when the backends have groups
	// The state machine learns where the attempt went, so that it can tell this backend's
	// trouble from the dependency's (hedge.Route).
	hedge.Routed(info.Ctx, set, i)
	res, err := p.ready[i].picker.Pick(info)
	if err != nil {
		set.Done(time.Now(), i, replica.Ignored)
		if r != nil {
			r.pickFailed(k, err)
		}
		return res, err
	}
	if r != nil {
		r.use(k, p.ready[i].addr)
	}
	next := res.Done
	res.Done = func(di balancer.DoneInfo) {
		if next != nil {
			next(di)
		}
		if r != nil && !r.stream || r == nil && info.Ctx.Value(streamKey{}) == nil {
			noteLoad(info.Ctx, set, i, p.current(i), p.ready[i].load, di.ServerLoad) // the server's ORCA report (load.go)
		}
		if r != nil && !di.BytesSent {
			r.mu.Lock()
			r.markUnsent(k)
			r.mu.Unlock()
		}
		set.Done(time.Now(), i, resultOf(info.Ctx, di))
	}
	return res, nil
}

// current returns the number that the picker in use gives the backend that is p's replica
// i, and -1 when that picker does not have it (or no backend is READY). The policy's load
// board is numbered by the picker in use (deliver, feedOOB): an attempt picked from an
// earlier picker may end after another one was installed, where its old number can belong to
// another backend.
func (p *picker) current(i int) int {
	if p.state == nil {
		return i // a picker built alone, in tests
	}
	cur := p.state.cur.Load()
	if cur == p {
		return i
	}
	if cur == nil {
		return -1
	}
	for j := range cur.ready {
		if cur.ready[j].addr == p.ready[i].addr {
			return j
		}
	}
	return -1
}

// unreadyPicker is the picker while no backend is READY: gRPC's own, which queues picks
// while backends connect and fails them when none can be reached. A failure it returns
// means the attempt reached no server: the call's route records it as unsent.
type unreadyPicker struct{ balancer.Picker }

func (p unreadyPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	res, err := p.Picker.Pick(info)
	if err != nil {
		if r, _ := info.Ctx.Value(routeKey{}).(*route); r != nil {
			r.mu.Lock()
			r.pickFailed(attemptIndex(info.Ctx), err)
			r.mu.Unlock()
		}
	}
	return res, err
}

// resultOf says what an attempt's end tells about its backend's health; ctx is the attempt's.
func resultOf(ctx context.Context, di balancer.DoneInfo) replica.Result {
	if di.Err == nil {
		return replica.Success
	}
	switch status.Code(di.Err) {
	case codes.Canceled, codes.DeadlineExceeded:
		if hedge.LostSlow(ctx) {
			return replica.Slow // it lost a race to a copy elsewhere, past the threshold
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The caller's deadline cut it: the backend had the whole of the caller's
			// patience and did not answer. A backend that has stopped answering while no
			// hedge rescues its calls shows it this way and no other.
			return replica.Slow
		}
		return replica.Ignored // it lost early, or its caller gave up
	case codes.Unavailable, codes.Internal, codes.Unknown, codes.DataLoss:
		if !di.BytesSent {
			return replica.Unreachable
		}
		return replica.Failure
	}
	return replica.Ignored // the backend's answer about the request, not about itself
}

// routeKey is the context key of a call's route.
type routeKey struct{}

// streamKey marks the context of a call whose server streams and that has no route (one the
// interceptor passes through unhedged), so that the picker leaves its per-call report out as
// it does a routed stream's (noteLoad).
type streamKey struct{}

// streamCtx is a context marked with streamKey.
type streamCtx struct{ context.Context }

func (c streamCtx) Value(key any) any {
	if key == (streamKey{}) {
		return true
	}
	return c.Context.Value(key)
}

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
	policy *hedge.Policy // the call's, for the servers' load reports (load.go); set before any pick
	stream bool          // a call whose server streams: its attempts' per-call reports are not used (noteLoad)
	mu     sync.Mutex
	inline [2]routeEntry
	used   []routeEntry
}

type routeEntry struct {
	attempt int
	addr    string // "" when no backend could be picked
	unsent  bool   // nothing of the attempt reached a server
}

// pickFailed records that attempt k's pick failed with err. A pick that gRPC retries
// (balancer.ErrNoSubConnAvailable: a backend is connecting) is not a failure of the attempt.
func (r *route) pickFailed(k int, err error) {
	if err == balancer.ErrNoSubConnAvailable {
		return
	}
	r.use(k, "")
	r.markUnsent(k)
}

// markUnsent records that nothing of attempt k reached a server.
func (r *route) markUnsent(k int) {
	for i := range r.used {
		if r.used[i].attempt == k {
			r.used[i].unsent = true
		}
	}
}

// unsent reports whether the balancer saw that nothing of attempt k reached a server.
func (r *route) unsent(k int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.used {
		if e.attempt == k {
			return e.unsent
		}
	}
	return false
}

// use records that attempt k goes to addr (a new pick for the same attempt replaces the old).
func (r *route) use(k int, addr string) {
	for i := range r.used {
		if r.used[i].attempt == k {
			r.used[i].addr, r.used[i].unsent = addr, false
			return
		}
	}
	if r.used == nil {
		r.used = r.inline[:0]
	}
	r.used = append(r.used, routeEntry{attempt: k, addr: addr})
}
