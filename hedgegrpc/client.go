package hedgegrpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/perkey"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// AttemptKey is the request metadata key that marks a hedged copy or a retry on the wire: the
// [Interceptor] sets it to the attempt index ("1", "2", ...) on every attempt but the first.
// A [Queue] or a server's logs can read it to tell copies from first attempts.
const AttemptKey = "hedge-attempt"

// PushbackKey is the trailer key of gRPC's retry pushback (gRFC A6): a server that is
// overloaded answers with it, in milliseconds. A positive value pauses hedging for that long,
// at most an hour (a longer one, a server's mistake or a hostile one, would stop hedging for
// good), or the policy's OverloadCooldown, when longer; a negative one, or one that is not a
// number, means "do not retry": the attempt's failure is final and hedging pauses for the
// cool-down.
const PushbackKey = "grpc-retry-pushback-ms"

// ErrConfig is wrapped by every error [NewInterceptor] returns for an invalid [Config].
var ErrConfig = errors.New("hedgegrpc: invalid Config")

// DescriptorResolver finds a method's protobuf descriptor by its full name (for example
// "grpc.health.v1.Health.Check"). *protoregistry.Files satisfies it.
type DescriptorResolver interface {
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

// Config configures an [Interceptor]. The zero value hedges nothing (its Policy has no
// Trigger) and treats every method as unsafe to repeat unless its descriptor says otherwise;
// Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}, Idempotent: ...} is a
// complete, recommended configuration. Every zero field means the default documented on it.
type Config struct {
	// Policy is the template for every method without an entry in Methods. Each method gets
	// its own [hedge.Policy] built from its template the first time it is called, so that
	// each learns its own latency, spends its own budget and trips its own breaker. A nil
	// Classify means [Classify]; a classifier of your own should fall back to it.
	Policy hedge.Config

	// Methods holds per-method templates, keyed by full method name ("/pkg.Service/Method")
	// or by service ("/pkg.Service/", for every method of the service). The most specific
	// key wins, then Policy.
	Methods map[string]hedge.Config

	// Idempotent names the methods ("/pkg.Service/Method") and services ("/pkg.Service/")
	// that are safe to send more than once. A method is also safe when its protobuf
	// descriptor, found through Descriptors, has idempotency_level NO_SIDE_EFFECTS or
	// IDEMPOTENT; and a call whose context was marked with [hedge.WithRepeatable] follows
	// that mark. Every other call is sent exactly once: never hedged, never retried.
	Idempotent []string

	// Descriptors looks up method descriptors for their idempotency_level option. nil means
	// [protoregistry.GlobalFiles], where generated code registers every compiled .proto.
	Descriptors DescriptorResolver

	// NonFatal lists the status codes that leave the call going: another attempt still
	// running may win, and with nothing in flight the next attempt starts after the
	// policy's backoff (when Attempts and the budget allow). nil means
	// UNAVAILABLE alone, as in gRPC's hedging design (gRFC A6). OK always wins;
	// RESOURCE_EXHAUSTED, and UNAVAILABLE with a pushback trailer, are overload signals
	// whatever this says (see [PushbackKey]); every other code is final.
	NonFatal []codes.Code

	// ReplayBuffer bounds, in bytes of protobuf encoding, the messages a client-streaming or
	// bidi call keeps to replay on its copies (gRFC A6's per-RPC buffer). A call whose
	// messages outgrow it commits to the attempt that has answered, if one has, else to its
	// earliest attempt still running, and is never hedged again; past it, SendMsg waits for
	// the committed attempt to send each message. 0 means [DefaultReplayBuffer].
	ReplayBuffer int

	// LoadReportInterval, when positive, has the hedging balancer ([Interceptor.DialOptions])
	// open an ORCA out-of-band stream to every backend and ask for a load report this often
	// (gRFC A51; the server half is [Queue.RegisterOOB], which grants at most one every
	// [DefaultOOBMinInterval] by default). Each report reaches the replica choice, and the
	// policies of the methods called through the connection in the last minute, as it
	// arrives, as a per-call report does, with the time it was received, so that first
	// attempts (power of two choices: fewer attempts outstanding, then the lighter report)
	// and hedges weigh every backend's load, not only that of the backends this client's
	// calls reached (in a fleet, few: BENCHMARKS.md, the eleventh and twelfth rounds). Keep
	// the interval well below [hedge.LoadMaxAge] (50–100ms), or the reports age out between
	// two, and below replica.RouteMaxAge for first attempts; an interval longer than two
	// thirds of LoadMaxAge asks for that (200ms; the service config's oobReportInterval
	// too), so that the next report arrives while the last still counts. 0 (the default)
	// opens no stream: the client reads the per-call reports a [Queue.ServerOptions] server
	// sends, which it always does. Negative is an error.
	LoadReportInterval time.Duration

	// MaxMethods is how many methods (full method names) the Interceptor keeps a policy
	// for. 0 means [DefaultMaxMethods]; negative is an error. A policy lives as long as the
	// Interceptor, and generated clients name a bounded set of methods, but a proxy that
	// forwards whatever its own clients name would otherwise grow without bound. Once
	// MaxMethods methods have policies, a call to another one goes to the invoker (or
	// streamer) as it is: never hedged nor retried. [Interceptor.OverMaxMethods] counts
	// such calls.
	MaxMethods int

	// a6 holds what ConfigFromServiceConfig read beyond the exported fields: the retry
	// throttle, and whether the default entry makes every method repeatable.
	a6 *a6Settings

	// Observer, when not nil, receives every event of every call with the full method name
	// of the call that made it. It runs synchronously in the goroutine driving the call, so
	// it must be fast and safe for concurrent use.
	Observer func(method string, e hedge.Event)
}

// Interceptor hedges gRPC calls under one [hedge.Policy] per method. Build it with
// [NewInterceptor], once per client connection (a method's policy knows the connection's
// backends by their number in its balancer: see [Interceptor.DialOptions]), and install
// [Interceptor.UnaryClient] (and [Interceptor.StreamClient] for streaming calls), or every
// option at once with [Interceptor.DialOptions]. It is safe for concurrent use.
//
// Each attempt has its own reply message (a new message of the caller's reply type); the
// winner's is merged into the caller's reply after the reply is reset, so attempts never
// share memory. grpc.Header, grpc.Trailer and grpc.Peer call options are filled from the
// winning attempt, or, when every attempt failed, from the attempt whose error is returned.
// Replies that are not protobuf messages cannot be copied: such calls pass through, unhedged.
//
// A method's policy is kept for the Interceptor's life, so method names must come from a
// bounded set, as they do from generated clients (Config.MaxMethods bounds it).
//
// The zero Interceptor is not usable: its calls fail with an error wrapping [ErrConfig]
// (status INTERNAL), Reconfigure returns one, and DialOptions panics, each naming
// NewInterceptor.
type Interceptor struct {
	cfg         Config
	nonFatal    uint32 // bit per code
	descriptors DescriptorResolver
	methods     perkey.Registry[*method]
	overMethods atomic.Int64              // calls passed through because MaxMethods methods had policies
	templates   atomic.Pointer[templates] // Policy, Methods and Idempotent; see Reconfigure

	// dialMu orders DialOptions and Reconfigure: unsignalled is set when DialOptions left
	// the start-signal stats handler out, and from then on Reconfigure refuses a trigger that
	// reads start signals.
	dialMu      sync.Mutex
	unsignalled bool
}

// method is what the interceptor knows of one full method name.
type method struct {
	name       string
	template   string       // the Methods key it was built from, "" for Config.Policy
	config     hedge.Config // the template as configured, before the interceptor's hooks
	policy     *hedge.Policy
	classify   func(error) hedge.Outcome
	repeatable bool
	signals    bool      // the trigger reads start signals: attempts ask for them
	throttle   *throttle // gRFC A6's retry throttling, from ConfigFromServiceConfig; nil: none
}

// Policy is the method's policy.
func (m *method) Policy() *hedge.Policy { return m.policy }

// errUnbuilt is the error of a call through an Interceptor that NewInterceptor did not build.
var errUnbuilt = &Error{
	Status: status.New(codes.Internal, "hedgegrpc: Interceptor used without NewInterceptor"),
	Err:    fmt.Errorf("%w: Interceptor used without NewInterceptor", ErrConfig),
}

// built reports whether NewInterceptor built i: it always sets descriptors.
func (i *Interceptor) built() bool { return i != nil && i.descriptors != nil }

// NewInterceptor returns an [Interceptor] for cfg. It returns an error wrapping [ErrConfig]
// that names the field and the rule when cfg is invalid, including when a policy template is.
func NewInterceptor(cfg Config) (*Interceptor, error) {
	cfg.Methods, cfg.Idempotent = maps.Clone(cfg.Methods), slices.Clone(cfg.Idempotent) // the caller's to change
	i := &Interceptor{cfg: cfg, descriptors: cfg.Descriptors}
	i.templates.Store(&templates{policy: cfg.Policy, methods: cfg.Methods, idempotent: cfg.Idempotent, everyRepeatable: cfg.a6 != nil && cfg.a6.defaultRepeatable})
	if i.descriptors == nil {
		i.descriptors = protoregistry.GlobalFiles
	}
	nonFatal := cfg.NonFatal
	if nonFatal == nil {
		nonFatal = []codes.Code{codes.Unavailable}
	}
	for _, c := range nonFatal {
		if c == codes.OK || c > 31 {
			return nil, fmt.Errorf("%w: Config.NonFatal: %v cannot be a failure", ErrConfig, c)
		}
		i.nonFatal |= 1 << c
	}
	if cfg.LoadReportInterval < 0 {
		return nil, fmt.Errorf("%w: Config.LoadReportInterval: must be >= 0, got %v", ErrConfig, cfg.LoadReportInterval)
	}
	if cfg.MaxMethods < 0 {
		return nil, fmt.Errorf("%w: Config.MaxMethods: must be >= 0, got %d", ErrConfig, cfg.MaxMethods)
	}
	i.methods.SetMax(cmp.Or(cfg.MaxMethods, DefaultMaxMethods))
	if cfg.ReplayBuffer < 0 {
		return nil, fmt.Errorf("%w: Config.ReplayBuffer: must be >= 0, got %d", ErrConfig, cfg.ReplayBuffer)
	}
	for key := range cfg.Methods {
		if !validKey(key) {
			return nil, fmt.Errorf("%w: Config.Methods: key %q is not /pkg.Service/Method nor /pkg.Service/", ErrConfig, key)
		}
	}
	for _, key := range cfg.Idempotent {
		if !validKey(key) {
			return nil, fmt.Errorf("%w: Config.Idempotent: %q is not /pkg.Service/Method nor /pkg.Service/", ErrConfig, key)
		}
	}
	if err := i.policyConfig("", cfg.Policy).Validate(); err != nil {
		return nil, fmt.Errorf("%w: Config.Policy: %w", ErrConfig, err)
	}
	for key, pc := range cfg.Methods {
		if err := i.policyConfig(key, pc).Validate(); err != nil {
			return nil, fmt.Errorf("%w: Config.Methods[%q]: %w", ErrConfig, key, err)
		}
	}
	return i, nil
}

func validKey(key string) bool {
	if !strings.HasPrefix(key, "/") {
		return false
	}
	svc, _, ok := strings.Cut(key[1:], "/")
	return ok && svc != ""
}

// policyConfig is a template with the interceptor's classifier and the method's observer.
func (i *Interceptor) policyConfig(name string, pc hedge.Config) hedge.Config {
	if pc.Classify == nil {
		pc.Classify = Classify
	}
	return perkey.Observe(pc, name, i.cfg.Observer)
}

// method returns the state of a full method name, creating it on first use, or nil when
// Config.MaxMethods methods have policies already (the call is then counted, and passes
// through unhedged).
func (i *Interceptor) method(name string) *method {
	if m, ok := i.methods.Get(name); ok {
		return m
	}
	m, err := i.methods.GetOrCreate(name, func() (*method, error) { return i.newMethod(name) })
	if errors.Is(err, perkey.ErrFull) {
		i.overMethods.Add(1)
		return nil
	}
	if err != nil {
		panic("hedgegrpc: " + err.Error()) // cannot happen: NewInterceptor built one from the same template
	}
	return m
}

// DefaultMaxMethods is how many methods an Interceptor keeps a policy for when
// Config.MaxMethods is 0: more than a client's services define. A policy with its latency
// estimate takes a few KiB.
const DefaultMaxMethods = 1024

// OverMaxMethods returns how many calls went through unhedged because Config.MaxMethods
// methods had policies already. Any is a sign that MaxMethods is too low for the methods
// this client calls (a proxy that forwards any method name meets them without end).
// hedgeotel's Metrics.WatchOverBound exports it as the counter hedge.calls.over_bound.
func (i *Interceptor) OverMaxMethods() int64 { return i.overMethods.Load() }

// newMethod builds the state of a full method name from its template.
func (i *Interceptor) newMethod(name string) (*method, error) {
	return i.buildMethod(name, nil)
}

// buildMethod builds the state of a full method name from its template as it stands, from
// its previous state old (nil for a method's first call), keeping old's policy when its
// template is the same (see Reconfigure).
func (i *Interceptor) buildMethod(name string, old *method) (*method, error) {
	tm := i.templates.Load()
	svc := serviceKey(name)
	template := name
	pc, ok := tm.methods[name]
	if !ok {
		template = svc
		if pc, ok = tm.methods[svc]; !ok {
			template, pc = "", tm.policy
		}
	}
	var prev *hedge.Policy
	var was hedge.Config
	if old != nil {
		prev, was = old.policy, old.config
	}
	hooked := i.policyConfig(name, pc)
	p, _, err := perkey.Rebuild(prev, was, pc, func(hedge.Config) hedge.Config { return hooked })
	if err != nil {
		return nil, err
	}
	m := &method{name: name, template: template, config: pc, policy: p, classify: hooked.Classify, repeatable: i.idempotent(tm, name, svc), signals: hooked.Trigger.ReadsStartSignals()}
	if i.cfg.a6 != nil {
		m.throttle = i.cfg.a6.throttle
	}
	return m, nil
}

// serviceKey is "/pkg.Service/" of "/pkg.Service/Method".
func serviceKey(name string) string {
	if k := strings.LastIndexByte(name, '/'); k > 0 {
		return name[:k+1]
	}
	return name
}

// idempotent reports whether the configuration or the method's descriptor says the method is
// safe to send more than once.
func (i *Interceptor) idempotent(tm *templates, name, svc string) bool {
	if tm.everyRepeatable {
		return true
	}
	for _, k := range tm.idempotent {
		if k == name || k == svc {
			return true
		}
	}
	// "/pkg.Service/Method" names the descriptor "pkg.Service.Method".
	full := protoreflect.FullName(strings.Replace(strings.TrimPrefix(name, "/"), "/", ".", 1))
	if !full.IsValid() {
		return false
	}
	d, err := i.descriptors.FindDescriptorByName(full)
	if err != nil {
		return false
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return false
	}
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	if !ok || opts == nil {
		return false
	}
	switch opts.GetIdempotencyLevel() {
	case descriptorpb.MethodOptions_NO_SIDE_EFFECTS, descriptorpb.MethodOptions_IDEMPOTENT:
		return true
	}
	return false
}

// Policy returns the policy of a full method name ("/pkg.Service/Method"), or nil when the
// method has not been called yet.
func (i *Interceptor) Policy(fullMethod string) *hedge.Policy { return i.methods.Policy(fullMethod) }

// Measured returns each called method's [hedge.Measured] figures, keyed by full method name.
func (i *Interceptor) Measured() map[string]hedge.Measured { return i.methods.Measured() }

// DialOptions returns everything a client connection needs to hedge with i: the unary and
// stream interceptors, gRPC's own retries turned off (grpc.WithDisableRetry: the policy's
// attempts are the only ones, and its budget bounds them), the [BalancerName] balancer as the
// default service config, so each attempt of a call goes to a different backend (with
// out-of-band load reports when [Config.LoadReportInterval] asks for them), and, when a
// trigger of i's reads start signals ([hedge.Trigger.ReadsStartSignals], as [hedge.Tied]
// does), the start-signal stats handler ([StatsHandler]). Pass them to grpc.NewClient with
// your transport credentials.
//
// Use an Interceptor for one ClientConn: a method's policy knows the backends by their number
// in its connection's balancer (the servers' load reports, the replicas a call has used), and
// two connections calling the same method through one Interceptor would number theirs over
// each other.
//
// The stats handler is left out when no trigger reads start signals because any stats
// handler costs every call of the connection: gRPC then builds an event, and copies the
// metadata, at each step of the call (about 15 allocations, a few per cent of a loopback
// call). Once DialOptions has left it out, [Interceptor.Reconfigure] refuses a trigger that
// reads start signals, which would never see one on such a connection; to keep that
// possible, install the options yourself, grpc.WithStatsHandler(StatsHandler()) among them.
func (i *Interceptor) DialOptions() []grpc.DialOption {
	if !i.built() {
		panic("hedgegrpc: Interceptor.DialOptions on an Interceptor not built by NewInterceptor")
	}
	opts := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(i.UnaryClient),
		grpc.WithChainStreamInterceptor(i.StreamClient),
		grpc.WithDisableRetry(),
		grpc.WithDefaultServiceConfig(serviceConfigFor(i.cfg.LoadReportInterval)),
	}
	i.dialMu.Lock()
	defer i.dialMu.Unlock()
	if i.templates.Load().readStartSignals(i) {
		return append(opts, grpc.WithStatsHandler(StatsHandler()))
	}
	i.unsignalled = true
	return opts
}

// attemptContext marks an attempt's outgoing metadata: its index when it is not the first,
// and a request for the start signal when the method's trigger reads them. An attempt mark the
// caller's outgoing metadata already carries (a proxy forwarding its incoming metadata) is
// dropped first: it speaks of another call, and a server's queue would take a first attempt
// for a copy. (A caller's request for the start signal is kept: asking for it is harmless.)
func (m *method) attemptContext(ctx context.Context, k int) context.Context {
	if metadata.ValueFromOutgoingContext(ctx, AttemptKey) != nil {
		md, _ := metadata.FromOutgoingContext(ctx) // a copy: the caller's is left alone
		md.Delete(AttemptKey)
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	switch {
	case k > 0 && m.signals:
		return metadata.AppendToOutgoingContext(ctx, AttemptKey, strconv.Itoa(k), StartSignalKey, "1")
	case k > 0:
		return metadata.AppendToOutgoingContext(ctx, AttemptKey, strconv.Itoa(k))
	case m.signals:
		return metadata.AppendToOutgoingContext(ctx, StartSignalKey, "1")
	}
	return ctx
}

// repeatable decides whether a call may reach the server more than once: not while an A6
// retry throttle holds calls to one attempt; otherwise the caller's word
// (hedge.WithRepeatable) first, then the method's.
func (m *method) repeatableFor(ctx context.Context) bool {
	if m.throttle.throttled() {
		return false
	}
	switch hedge.RepeatabilityFrom(ctx) {
	case hedge.Repeatable:
		return true
	case hedge.NotRepeatable:
		return false
	}
	return m.repeatable
}

// callOptions splits a call's options into those the interceptor fills from the winning
// attempt (header, trailer, peer), the grpc.OnFinish callbacks it runs once for the call (gRPC
// documents them as once per RPC, not once per attempt), and those every attempt passes on.
type callOptions struct {
	header   *metadata.MD
	trailer  *metadata.MD
	peer     *peer.Peer
	onFinish []func(error)
	rest     []grpc.CallOption
}

func splitOptions(opts []grpc.CallOption) callOptions {
	var co callOptions
	found := false
	for _, o := range opts {
		switch o.(type) {
		case grpc.HeaderCallOption, *grpc.HeaderCallOption, grpc.TrailerCallOption, *grpc.TrailerCallOption, grpc.PeerCallOption, *grpc.PeerCallOption,
			grpc.OnFinishCallOption, *grpc.OnFinishCallOption:
			found = true
		}
	}
	if !found {
		co.rest = opts // nothing to take out: share the caller's slice, read only
		return co
	}
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			co.header = o.HeaderAddr
		case *grpc.HeaderCallOption:
			co.header = o.HeaderAddr
		case grpc.TrailerCallOption:
			co.trailer = o.TrailerAddr
		case *grpc.TrailerCallOption:
			co.trailer = o.TrailerAddr
		case grpc.PeerCallOption:
			co.peer = o.PeerAddr
		case *grpc.PeerCallOption:
			co.peer = o.PeerAddr
		case grpc.OnFinishCallOption:
			co.onFinish = append(co.onFinish, o.OnFinish)
		case *grpc.OnFinishCallOption:
			co.onFinish = append(co.onFinish, o.OnFinish)
		default:
			co.rest = append(co.rest, o)
		}
	}
	return co
}

// fill copies an attempt's header, trailer and peer to where the caller asked for them.
func (co *callOptions) fill(r *attemptResult) {
	if co.header != nil {
		*co.header = r.header
	}
	if co.trailer != nil {
		*co.trailer = r.trailer
	}
	if co.peer != nil && r.peer.Addr != nil {
		*co.peer = r.peer
	}
}

// finish runs the call's grpc.OnFinish callbacks with its error.
func (co *callOptions) finish(err error) {
	for _, f := range co.onFinish {
		f(err)
	}
}

// attemptResult is what one attempt received. Only the attempt's goroutine writes it, until
// the attempt function returns.
type attemptResult struct {
	reply   proto.Message
	header  metadata.MD
	trailer metadata.MD
	peer    peer.Peer
	opts    []grpc.CallOption
	optBuf  [4]grpc.CallOption // opts, when they fit
}

// attemptError is a failed attempt: its status, what it received, and how the interceptor
// classified it. It unwraps to the status error the attempt returned.
type attemptError struct {
	err     error
	st      *status.Status
	result  *attemptResult
	outcome hedge.Outcome
	stop    bool // the pushback trailer said not to retry (negative or not a number)
}

func (e *attemptError) Error() string              { return e.err.Error() }
func (e *attemptError) Unwrap() error              { return e.err }
func (e *attemptError) GRPCStatus() *status.Status { return e.st }

// mark classifies a failed attempt from its status code and trailer. unsent says the
// balancer saw that nothing of the attempt reached a server (no backend could be picked, or
// its stream was never created): like HTTP's connection refused, it is [hedge.MarkUnsent]'s
// case, and the core resends it at once to another backend.
func (i *Interceptor) mark(err error, r *attemptResult, unsent bool) error {
	st, _ := status.FromError(err)
	e := &attemptError{err: err, st: st, result: r}
	if unsent && st.Code() == codes.Unavailable {
		e.outcome = hedge.Outcome{Class: hedge.Retriable, Err: e, Unsent: true}
		return e
	}
	code := st.Code()
	pushback, hasPushback, stop := pushbackFrom(r.trailer)
	e.stop = stop
	switch {
	case code == codes.ResourceExhausted || code == codes.Unavailable && hasPushback:
		// The server says it is overloaded: hedging pauses. A negative pushback says
		// "do not retry" as well: the failure is final.
		e.outcome = hedge.Outcome{Class: hedge.Retriable, Err: e, Overload: true, RetryAfter: pushback}
		if stop {
			e.outcome.Class = hedge.Permanent
		}
	case code < 32 && i.nonFatal&(1<<code) != 0:
		// A pushback on another retriable code spaces the retry as well; a negative one
		// ("do not retry", whatever the code, as gRFC A6 has it) makes the failure final.
		e.outcome = hedge.Outcome{Class: hedge.Retriable, Err: e, RetryAfter: pushback}
		if stop {
			e.outcome.Class = hedge.Permanent
		}
	default:
		e.outcome = hedge.Outcome{Class: hedge.Permanent, Err: e}
	}
	return e
}

// pushbackFrom reads the retry pushback trailer: a delay, whether there was one, and whether
// it says not to retry (negative or not a number, as gRFC A6 has it).
func pushbackFrom(trailer metadata.MD) (d time.Duration, ok, stop bool) {
	v := trailer.Get(PushbackKey)
	if len(v) == 0 {
		return 0, false, false
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	if err != nil || ms < 0 {
		return 0, true, true
	}
	return time.Duration(min(ms, int64(time.Hour/time.Millisecond))) * time.Millisecond, true, false
}

// Classify is the classifier the interceptor's policies use unless their template sets
// another: it reads the class the interceptor gave each failed attempt from its status code
// and trailer (OK wins; a NonFatal code is [hedge.Retriable]; RESOURCE_EXHAUSTED, and
// UNAVAILABLE with a pushback, are overload signals; every other code is [hedge.Permanent]),
// and falls back to [hedge.Classify] for other errors. A classifier of your own receives
// the attempt's error, which unwraps to its status error, and should fall back to this one.
func Classify(err error) hedge.Outcome {
	if err == nil {
		return hedge.Outcome{Class: hedge.Success}
	}
	var e *attemptError
	if errors.As(err, &e) {
		o := e.outcome
		o.Err = err
		return o
	}
	return hedge.Classify(err)
}

// Error is the error a call returns when no attempt succeeded and the caller's context is
// still live. Its status (what status.Code and status.FromError see) is that of the most
// informative failure: a final one before a retriable one, then the last to answer; a call
// refused before any attempt (breaker open: UNAVAILABLE; concurrency limit:
// RESOURCE_EXHAUSTED) has a status of its own. Unwrap returns the core's error for the call
// ([hedge.Call.Err]), so errors.Is sees [hedge.ErrBreakerOpen] and errors.As a
// *[hedge.AttemptsError].
type Error struct {
	Status  *status.Status // what the caller's gRPC code sees
	Err     error          // the core's error: an attempt's failure, or why none was made
	attempt *attemptError
}

func (e *Error) Error() string              { return e.Err.Error() }
func (e *Error) Unwrap() error              { return e.Err }
func (e *Error) GRPCStatus() *status.Status { return e.Status }

// newError is the error of a call none of whose attempts succeeded. The core has already
// chosen the failure to report (the *hedge.AttemptsError's Err: a final one before a
// retriable one, then the last to answer); its status is the call's. A call refused before
// any attempt has a status of its own.
func newError(err error) *Error {
	e := &Error{Err: err}
	var all *hedge.AttemptsError
	if errors.As(err, &all) && all.Err != nil {
		errors.As(all.Err, &e.attempt)
	} else {
		errors.As(err, &e.attempt)
	}
	switch {
	case e.attempt != nil:
		e.Status = e.attempt.st
	case errors.Is(err, hedge.ErrBreakerOpen):
		e.Status = status.New(codes.Unavailable, err.Error())
	case errors.Is(err, hedge.ErrLimitExceeded):
		e.Status = status.New(codes.ResourceExhausted, err.Error())
	default:
		e.Status = status.Convert(err)
	}
	return e
}
