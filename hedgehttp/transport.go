// Package hedgehttp puts request hedging into net/http, on both sides of the wire.
//
// On the client, [Transport] is an [http.RoundTripper] that sends a second copy of a request
// that is taking longer than almost every other request to the same host, returns whichever
// good answer comes first, and closes the rest. It keeps one [hedge.Policy] per host, so each
// host has its own latency estimate, budget and breaker; it hedges only what is safe to send
// twice (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or a request carrying an Idempotency-Key or
// marked with [hedge.WithRepeatable]); and a fast 5xx or 429 never wins over a slow 200.
//
// On the server, [Queue] is middleware that bounds the handlers running at once with a FIFO
// queue in front of them, so that a client's cancellation reaches the server: a hedged copy
// that lost and was cancelled leaves the queue without running, and one that is running sees
// its context cancelled. Without it, every losing copy costs the server a full service time.
//
// A Queue also tells every client how loaded it is: on every response ([LoadHeader]) and, for
// clients that ask ([Config.LoadReportInterval]), on a load stream of its own
// ([Queue.LoadStream]) every few milliseconds. A Transport sends no hedge into a backlog the
// servers report, and sends one to the replica with the shortest queue.
package hedgehttp

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/perkey"
	"github.com/hedgekit/hedge/replica"
)

// ErrConfig is wrapped by every error [NewTransport] returns for an invalid [Config].
var ErrConfig = errors.New("hedgehttp: invalid Config")

// ErrBodyTruncated ends the body of a failing response (see [StatusError]) whose server sent
// more than Config.ErrorBodyLimit bytes: only that many were kept.
var ErrBodyTruncated = errors.New("hedgehttp: failing response body truncated")

// Config configures a [Transport]. The zero value hedges nothing (its Policy has no
// Trigger); Config{Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)}} is a complete,
// recommended configuration. Every zero field means the default documented on it.
type Config struct {
	// Policy is the template for the per-host policies: each host (see Key) gets its own
	// [hedge.Policy] built from it the first time it is called, so each learns its own
	// latency, spends its own budget and trips its own breaker. A nil Policy.Classify means
	// [Classify], which understands [StatusError]; a classifier of your own should fall back
	// to it. Policy.Observer, when set, receives every host's events without the host; see
	// Observer for events with it.
	Policy hedge.Config

	// Next sends each attempt. nil means [http.DefaultTransport]. Each attempt's request
	// carries a context derived from the caller's (so its values and deadline), and hedged
	// attempts carry the AttemptHeader. When Next is an *http.Transport, a request it cannot
	// send as hedgehttp knows (a scheme other than http and https, which only a protocol
	// registered with RegisterProtocol serves, or no host and no replica to give it one) goes
	// to it once, unhedged and unretried, and its error comes back at once.
	Next http.RoundTripper

	// NextHonoursContext says that Next returns promptly once a request's context ends, as
	// *http.Transport does (an *http.Transport as Next, or nil Next, is taken to honour it
	// whatever this field says). Each call then sends its first attempt on the caller's
	// goroutine ([hedge.DoInlineDetached]) rather than on a goroutine of its own, which on a
	// fast dependency is most of what hedging a request costs; hedges and retries still run
	// on goroutines of their own. Set it for a Next that wraps an *http.Transport and
	// passes the request's context on. With a Next that ignores a cancelled context, leave
	// it false: RoundTrip could then return only when that Next does. One cost remains: a
	// first attempt that loses is cancelled at once, so that the call returns at the winner's
	// answer, even when its response arrived in the same instant as the winner's (its request
	// runs on the attempt's own context, which is most of why it costs so little); over
	// HTTP/1.1 that closes its connection, where a loser on a goroutine of its own gets a
	// short grace to finish, or is drained once its response has arrived, and keeps it.
	NextHonoursContext bool

	// Key names the dependency a request calls; each name gets its own policy. nil means
	// scheme://host:port of the request's URL, with the port made explicit and the host in
	// lower case (so http://a, http://a:80 and http://A share a policy). Use it to group the
	// hosts of one logical service, or to split one host by path. It runs on every request,
	// so it must be fast, and it must be safe for concurrent use. A policy is kept for the
	// Transport's life, so keys must come from a bounded set (MaxKeys bounds it). Without
	// Replicas (or ReplicaGroups), a key that groups several hosts is one server to the
	// servers' load reports: a report from any of them ([LoadHeader]) stands for the key's
	// latest, and LoadReportInterval opens a stream on the first host called only. Name the
	// hosts as the key's Replicas for each to be read on its own.
	Key func(*http.Request) string

	// PolicyFor, when not nil, configures each dependency on its own (per-operation
	// configuration files build it): it is called once per key (see Key), when the key is
	// first called, and returns the key's policy configuration, used in place of Policy, and
	// whether the key's requests may be sent more than once: hedge.Repeatable or
	// hedge.NotRepeatable for every request, or hedge.RepeatableDefault to decide by method
	// and idempotency key. A context marked with [hedge.WithRepeatable] still wins. The
	// configuration's Observer and Classify are treated as Policy's. An invalid
	// configuration fails the requests to that key with its error.
	PolicyFor func(key string) (hedge.Config, hedge.Repeatability)

	// Replicas, when not nil, returns the addresses (host:port) of the replicas behind the
	// dependency named key, or nil to send every attempt to the request's own URL. Each
	// attempt goes to the replica Replica's balancer picks among those in good health that
	// its call has not used yet, so a hedge or a retry goes to another replica than its
	// primary whenever a healthy one is left; replicas that keep failing (refusing
	// connections, answering 5xx) are ejected for a while (see [replica.Config]). Only the
	// URL's host changes: the Host header stays the request's (set Request.Host to control
	// it), and over HTTPS so does the name a replica is asked for (SNI) and its certificate
	// is checked against: the Host header's (the URL's host unless Request.Host names
	// another), not the replica's address. (Where Next is an *http.Transport, through a
	// clone of it per name, for up to 2 × MaxKeys names; a Next that sets
	// TLSClientConfig.ServerName or DialTLSContext keeps its own rule, and so does another
	// RoundTripper, which sees only the replica's address.) It runs on every request, so it must be fast; return the same slice until the
	// addresses change, and never modify a slice once returned. Health carries over for
	// addresses that stay when the list changes. List each address once: an address is one
	// replica, and twice it would let a hedge go back to its primary's address while another
	// one is healthy; a list with an address twice fails the key's calls with an error
	// wrapping [ErrConfig] (see [replica.NewPool]).
	Replicas func(key string) []string

	// ReplicaGroups, when not nil, is Replicas in ordered groups with weights (set one or the
	// other): each call's first attempt goes to the first group, and a hedge or a retry to
	// another replica of the same group while one is healthy and unused, to the next group
	// only when none is; a replica's share of its group follows its weight (see
	// [replica.Layout]). Use it to keep a call in its own zone and hedge to another one only
	// when it must, or to give a canary a small share. Health and ejection are per replica,
	// as with Replicas. nil or an empty result sends every attempt to the request's own URL.
	// The same rules as Replicas' hold: fast, the same slice until the groups change, never
	// modified once returned.
	ReplicaGroups func(key string) []replica.Group

	// Replica configures replica choice and outlier detection for each dependency with
	// Replicas or ReplicaGroups. The zero value is power of two choices on outstanding attempts with the
	// defaults documented on [replica.Config].
	Replica replica.Config

	// ShareConnections lets a hedge to the same host as its primary ride the primary's
	// connections. By default (false), when Next is an *http.Transport, a hedge to its
	// primary's host (one without replicas, or whose other replicas are ejected or used) that
	// speaks HTTP/2 is sent through a clone of Next, with connections of its own: over HTTP/2
	// every request to a host shares one connection, and one connection-level error (a
	// malformed response, a GOAWAY, a stalled connection) would fail the primary and its
	// hedge at once. (Over HTTP/1 every request in flight has a connection of its own
	// already.) The clone costs one connection per HTTP/2 host that hedges, and nothing on
	// calls that do not; close its idle connections with [Transport.CloseIdleConnections] (or
	// the http.Client's), not only Next's. When Next has an HTTP/2 upgrade of its own in
	// TLSNextProto (golang.org/x/net/http2.ConfigureTransport installs one), the clone leaves
	// it out, since it would pool the clone's connections with Next's, and speaks net/http's
	// own HTTP/2 with Next.HTTP2's settings.
	ShareConnections bool

	// Observer, when not nil, receives every event of every call with the key of the host
	// that made it. It runs synchronously in the goroutine driving the call, so it must be
	// fast and safe for concurrent use. nil means no per-host events, at no cost.
	Observer func(key string, e hedge.Event)

	// MaxBodyBuffer is how many bytes of a request body without GetBody are read into memory
	// so that the body can be sent more than once. 0 means 1 MiB. A body larger than this
	// (or of unknown length that turns out larger) is sent once, never hedged nor retried,
	// and never with a half-consumed body. Negative means never buffer: only requests with
	// GetBody (as built by http.NewRequest from a bytes.Buffer, bytes.Reader or strings.Reader)
	// or without a body are hedged.
	MaxBodyBuffer int64

	// MaxKeys is how many dependencies (keys: see Key) the Transport keeps a policy for. 0
	// means [DefaultMaxKeys]; negative is an error. A policy lives as long as the Transport,
	// so a client that calls hosts without end (a crawler, a host per tenant) would otherwise
	// grow without bound. Once MaxKeys dependencies have policies, a request to another one
	// is sent to Next once: never hedged nor retried, as a request that may not be sent
	// twice, to a replica drawn at random when Replicas (or ReplicaGroups' first group)
	// lists some for it, to its URL otherwise. [Transport.OverMaxKeys] counts such requests.
	MaxKeys int

	// ErrorBodyLimit is how many bytes of a failing response's body (a 5xx, 429 or 408) are
	// read into memory before the attempt reports its failure. Reading it frees the
	// connection for reuse, and keeps the response usable when it is the one returned to the
	// caller after every attempt failed. It also bounds how much of a losing response's body
	// is read, and thrown away, to keep its connection. 0 means 64 KiB; negative is an error.
	ErrorBodyLimit int64

	// LoadReportInterval, when > 0, opens a load stream ([Queue.LoadStream]) on every server
	// a host's calls go to (each of its replicas, or the request's own host without
	// replicas) and asks for a report this often; the server grants no less than its own
	// minimum (50 ms by default). The reports reach the host's policy and replicas as a
	// response's [LoadHeader] does, but from every server, every interval, however few of the
	// fleet's calls this client makes: with many clients, a response's report is a hundred
	// milliseconds old or more, a stream's at most one interval. 0 (the default) opens none;
	// negative is an error. Each stream is one long GET through Next (over HTTP/1.1, a
	// connection of its own); a host's streams open at its first call and close after a
	// minute without one, or at [Transport.Close]. Hosts (keys) whose calls go to the same
	// server with the same Host header share its stream, so splitting a host by path or by
	// operation opens no more of them. A server without a stream (404, 405 or 501) is
	// asked again once a minute.
	LoadReportInterval time.Duration

	// LoadStreamPath is the path of the servers' load streams; "" means [LoadStreamPath].
	// It must be an absolute path that needs no escaping.
	LoadStreamPath string

	// LoadStreamRequest, when not nil, is called with each load stream's request before it
	// is sent, to add what the servers' middleware wants of a request: credentials, a
	// tenant, a trace header. A stream's request is the Transport's own (a GET of
	// LoadStreamPath on the server, with the Host header of the hosts it reports to, shared by
	// every host that calls that server) and carries no header of any caller's. It may set
	// headers; it must not change the URL, the method or the context. It is called on the
	// stream's own goroutine, at each opening; a panic in it fails that opening.
	LoadStreamRequest func(*http.Request)

	// LoadStreamError, when not nil, is told why a server's load stream failed: it could not
	// be opened (the error of Next's RoundTrip), the server answered with a status other than
	// 200 (an error wrapping [ErrLoadStream] that names it: 404 for a server with no stream,
	// 401 for one that wants credentials; see LoadStreamRequest), it stalled, or it ended.
	// server is the address the stream was opened on. The stream is opened again after a
	// backoff whatever the error; without this, its failures are silent, and a host's policy
	// falls back on responses' reports and its own inference. It is called on the stream's
	// own goroutine; a panic in it is dropped. A stream stopped by the Transport (Close, a
	// host gone idle or moved to other replicas) is no failure.
	LoadStreamError func(server string, err error)
}

// Transport is an [http.RoundTripper] that hedges and retries requests under one
// [hedge.Policy] per host. Build it with [NewTransport] (the zero value is not usable),
// once, and share it: like
// http.Transport, its value is in what it keeps between requests (here the policies and
// their latency estimates), and a Transport built per request never hedges. It is safe for
// concurrent use.
//
// Each attempt is a clone of the caller's request with its own context. The winner's context
// stays alive until the caller closes the response body (or reads it to the end); a losing
// attempt still waiting for its response is cancelled, and one whose response had already
// arrived is drained (up to ErrorBodyLimit bytes, for at most 250ms) and closed, so that its
// connection is reused (but for a first attempt sent on the caller's goroutine, which is
// cancelled either way: see Config.NextHonoursContext); a failing response (5xx but 501, 429,
// 408) never wins and is returned only when every attempt failed: a final one (a 4xx) over a
// retriable one, else the last one that answered (see RoundTrip).
//
// When a host's trigger reads start signals ([hedge.Trigger.ReadsStartSignals], as
// [hedge.Tied] does: Config.Policy's, or the one Config.PolicyFor gives the host), every
// attempt to it asks the server for one ([StartSignalHeader]); a [Queue] answers with an informational [StartedStatus] response when a worker starts the request,
// and the Transport passes it on to the policy with [hedge.StartedService], through an
// httptrace.ClientTrace joined to any trace the caller set on the request's context. With
// Tied, the first copy to start cancels the others. A server that sends no such response
// changes nothing: the policy hedges on latency alone. Other triggers neither ask nor listen,
// and pay nothing for it.
type Transport struct {
	cfg        Config
	next       http.RoundTripper
	apart      http.RoundTripper // sends hedges and retries to their primary's host; nil: next
	classify   func(error) hedge.Outcome
	discardFn  func(*http.Response, error) // t.discard, bound once rather than per request
	maxBuffer  int64
	errorLimit int64
	signals    bool // ask every host for start signals, whatever its trigger (tests); see hostState.signals
	inline     bool // Next honours its context: the first attempt runs on the caller's goroutine
	// h1 is Next when it is an *http.Transport: over HTTP/1 a first attempt on the caller's
	// goroutine is cancelled through it rather than through a context of its own (see
	// call.attempt).
	h1 *http.Transport
	// nameReplicas says that h1 checks certificates against the URL's host (no ServerName
	// or TLS dialer of its own): an HTTPS request sent to a replica's address then goes
	// through a clone of it that checks them against the request's host (replicaTLS).
	nameReplicas bool
	// named holds those clones, by the name they check.
	named perkey.Map[string, *namedTLS]
	// sentOwn remembers the requests lately sent as they are (see sentBefore).
	sentOwn [sentOwnSlots]atomic.Uintptr

	// hosts holds each dependency by name (see Config.Key); byURL, under the default
	// keying, each scheme and host as requests spell them, so that finding a request's host
	// costs one lookup without building a string.
	hosts perkey.Registry[*host]
	byURL perkey.Map[urlKey, *urlHost]
	// lastURL is the entry of byURL the last request found: a client that calls one host
	// (the usual case) finds it again by comparing two strings, without hashing them.
	lastURL atomic.Pointer[urlHost]

	// overKeys counts the requests sent once because MaxKeys hosts had policies already.
	overKeys atomic.Int64

	// streams is the load streams of Config.LoadReportInterval; nil when it is 0.
	streams *loadStreams

	closeMu sync.Mutex
	closed  bool
	onClose []func() // OnClose's functions, until Close runs them
}

// urlKey is the default key before normalisation: looking it up allocates nothing.
type urlKey struct{ scheme, host string }

// urlHost is an entry of Transport.byURL: the host a spelling of scheme and host names.
type urlHost struct {
	k urlKey
	h *host
}

// host is one dependency: its name, its policy, and whether its requests are repeatable
// (Config.PolicyFor).
type host struct {
	name  string
	state atomic.Pointer[hostState]    // replaced whole by Transport.Refresh
	pool  atomic.Pointer[replica.Pool] // nil until a request finds replicas
	mu    sync.Mutex                   // serialises writers of pool
	proto atomic.Int32                 // the major HTTP version it speaks, as last seen; 0 unknown

	// With load streams (Config.LoadReportInterval): streaming says the host's streams
	// follow streamPool (nil: the request's own host, streamOwn), used that it called since
	// the last idle check (loadStreams.checkIdle). A report is placed by these, which follow
	// sets before it joins or leaves a stream: a stream the host is leaving reports nothing to it.
	streaming  atomic.Bool
	streamPool atomic.Pointer[replica.Pool]
	streamOwn  atomic.Pointer[string]
	used       atomic.Bool
}

// Policy is the host's policy.
func (h *host) Policy() *hedge.Policy { return h.state.Load().policy }

// gotConn learns the host's protocol from the first connection an attempt gets, before any
// response: the first hedges to a host must already know whether they would share their
// primary's connection. Responses keep it up to date.
func (h *host) gotConn(info httptrace.GotConnInfo) {
	tc, ok := info.Conn.(interface{ ConnectionState() tls.ConnectionState })
	if !ok {
		return // without TLS the connection does not say (HTTP/2 may be spoken in clear): the response will
	}
	v := int32(1)
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		v = 2
	}
	h.proto.CompareAndSwap(0, v)
}

// poolFor returns the host's replicas for addrs: the current pool when the addresses have
// not changed, a new one that keeps the health of the addresses that stayed when they have.
// NewTransport checked cfg on a one-replica Set; should the replica package still refuse it
// for this many addresses, the error fails the request (wrapping ErrConfig) rather than
// panicking in the caller's goroutine.
func (h *host) poolFor(addrs []string, cfg replica.Config) (*replica.Pool, error) {
	if p := h.pool.Load(); p != nil && p.Same(addrs) {
		return p, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pool.Load()
	if p != nil && p.Same(addrs) {
		return p, nil
	}
	var err error
	if p == nil {
		p, err = replica.NewPool(addrs, cfg)
	} else {
		p, err = p.With(addrs)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: Config.Replica for %d replicas of %s: %w", ErrConfig, len(addrs), h.name, err)
	}
	h.pool.Store(p)
	return p, nil
}

// NewTransport returns a [Transport] for cfg. It returns an error wrapping [ErrConfig] that
// names the field and the rule when cfg is invalid, including when cfg.Policy is (the
// policy template is checked by building one policy from it).
func NewTransport(cfg Config) (*Transport, error) {
	if cfg.ErrorBodyLimit < 0 {
		return nil, fmt.Errorf("%w: Config.ErrorBodyLimit must be >= 0, got %d", ErrConfig, cfg.ErrorBodyLimit)
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("%w: Config.MaxKeys must be >= 0, got %d", ErrConfig, cfg.MaxKeys)
	}
	if _, err := replica.New(1, cfg.Replica); err != nil {
		return nil, fmt.Errorf("%w: Config.Replica: %w", ErrConfig, err)
	}
	if cfg.Replicas != nil && cfg.ReplicaGroups != nil {
		return nil, fmt.Errorf("%w: set Config.Replicas or Config.ReplicaGroups, not both", ErrConfig)
	}
	t := &Transport{
		cfg:        cfg,
		next:       cfg.Next,
		classify:   cfg.Policy.Classify,
		maxBuffer:  cfg.MaxBodyBuffer,
		errorLimit: cfg.ErrorBodyLimit,
	}
	t.discardFn = t.discard
	maxKeys := cmp.Or(cfg.MaxKeys, DefaultMaxKeys)
	t.hosts.SetMax(maxKeys)
	// Spellings of a host (http://a and http://A:80) share its policy; they are bounded
	// apart, more loosely, so that a host spelt many ways still finds its entry (hostFor).
	t.byURL.Max = 2 * maxKeys
	streams, err := newLoadStreams(t, cfg)
	if err != nil {
		return nil, err
	}
	t.streams = streams
	if t.next == nil {
		t.next = http.DefaultTransport
	}
	ht, isTransport := t.next.(*http.Transport)
	if isTransport && !cfg.ShareConnections {
		t.apart = cloneApart(ht)
	}
	t.inline = isTransport || cfg.NextHonoursContext
	if isTransport {
		t.h1 = ht
		tc := ht.TLSClientConfig
		//lint:ignore SA1019 DialTLS, though deprecated, still replaces the handshake where set
		t.nameReplicas = (tc == nil || tc.ServerName == "") && ht.DialTLSContext == nil && ht.DialTLS == nil
		t.named.Max = 2 * maxKeys // as many as byURL's spellings: a host's Host headers may differ from its keys
	}
	if t.classify == nil {
		t.classify = Classify
	}
	if t.maxBuffer == 0 {
		t.maxBuffer = 1 << 20
	}
	if t.errorLimit == 0 {
		t.errorLimit = 64 << 10
	}
	if err := t.policyConfig("").Validate(); err != nil {
		return nil, fmt.Errorf("%w: Config.Policy: %w", ErrConfig, err)
	}
	return t, nil
}

// policyConfig is the template with this Transport's classifier and the host's observer.
func (t *Transport) policyConfig(name string) hedge.Config {
	pc := t.cfg.Policy
	return t.withHooks(name, pc)
}

// withHooks gives a host's policy configuration this Transport's classifier (unless it has
// its own) and the host's observer.
func (t *Transport) withHooks(name string, pc hedge.Config) hedge.Config {
	if pc.Classify == nil {
		pc.Classify = t.classify
	}
	return perkey.Observe(pc, name, t.cfg.Observer)
}

// hostFor returns the host req calls, creating it (and its policy) on first use.
func (t *Transport) hostFor(req *http.Request) (*host, error) {
	if t.cfg.Key != nil {
		name := t.cfg.Key(req)
		if h, ok := t.hosts.Get(name); ok {
			return h, nil
		}
		return t.newHost(name)
	}
	k := urlKey{req.URL.Scheme, req.URL.Host}
	if e := t.lastURL.Load(); e != nil && e.k == k {
		return e.h, nil
	}
	e, ok := t.byURL.Load(k)
	if !ok {
		// Another spelling of a known host finds it by its canonical name.
		var err error
		e, err = t.byURL.LoadOrAdd(k, func() (*urlHost, error) {
			h, err := t.newHost(canonicalName(req))
			if err != nil {
				return nil, err
			}
			return &urlHost{k: k, h: h}, nil
		})
		if errors.Is(err, perkey.ErrFull) && t.byURL.Max > 0 && len(t.byURL.Snapshot()) >= t.byURL.Max {
			// Too many spellings: look the host up by its name, at the cost of building it.
			return t.newHost(canonicalName(req))
		}
		if err != nil {
			return nil, err
		}
	}
	t.lastURL.Store(e)
	return e.h, nil
}

// newHost returns the host named name, creating it (and its policy) on first use.
func (t *Transport) newHost(name string) (*host, error) {
	return t.hosts.GetOrCreate(name, func() (*host, error) {
		h := &host{name: name}
		st, _, err := t.hostState(name, nil)
		if err != nil {
			return nil, err
		}
		h.state.Store(st)
		return h, nil
	})
}

// canonicalName is scheme://host:port with the default port made explicit and the host in
// lower case: host names are case-insensitive (RFC 3986, 3.2.2), and http://A.test and
// http://a.test are one server, with one policy and one budget.
func canonicalName(req *http.Request) string {
	u := req.URL
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	h := strings.ToLower(u.Hostname())
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]" // an IPv6 literal
	}
	return u.Scheme + "://" + h + ":" + port
}

// Replicas returns the replicas of the dependency named key (see Config.Key) as they stood
// at its last request, with their health, or nil when no request to it has found replicas.
func (t *Transport) Replicas(key string) *replica.Pool {
	if h, ok := t.hosts.Get(key); ok {
		return h.pool.Load()
	}
	return nil
}

// Policy returns the policy of the dependency named key (see Config.Key), or nil when no
// request has gone to it yet.
func (t *Transport) Policy(key string) *hedge.Policy { return t.hosts.Policy(key) }

// DefaultMaxKeys is how many dependencies a Transport keeps a policy for when
// Config.MaxKeys is 0: far more than a service calls, far fewer than a crawler meets. A
// policy with its latency estimate takes a few KiB.
const DefaultMaxKeys = 1024

// OverMaxKeys returns how many requests went to Next unhedged because Config.MaxKeys
// dependencies had policies already. Any is a sign that MaxKeys is too low for the hosts
// this client calls, or that Key names more than dependencies (a path, a request ID).
// hedgeotel.NewTransport exports it as the counter hedge.calls.over_bound.
func (t *Transport) OverMaxKeys() int64 { return t.overKeys.Load() }

// Measured returns each host's [hedge.Measured] figures, keyed by host name (see
// Config.Key), for every host called so far.
func (t *Transport) Measured() map[string]hedge.Measured { return t.hosts.Measured() }

// CloseIdleConnections closes the idle connections of the next RoundTripper, when it has
// such a method (http.Client.CloseIdleConnections calls this).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	if c, ok := t.apart.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	for _, n := range t.named.Snapshot() {
		n.next.CloseIdleConnections()
		if n.apart != nil {
			n.apart.CloseIdleConnections()
		}
	}
}

// repeatableMethod reports whether a request with this method may be sent more than once
// without being marked: the methods RFC 9110 calls idempotent.
func repeatableMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// hasIdempotencyKey reports whether the request carries an idempotency key, the header
// clients use to make a POST or PATCH safe to repeat (the same two net/http honours).
func hasIdempotencyKey(h http.Header) bool {
	_, a := h["Idempotency-Key"]
	_, b := h["X-Idempotency-Key"]
	return a || b
}

// RoundTrip sends req under its host's policy: hedged and retried when the request is
// repeatable and the policy allows, sent exactly once otherwise. It returns the first
// successful response: a fast failing response from one attempt (a 503, or a 404 from a
// stale replica) never beats a slower success from another. When every attempt failed it
// returns a failing response the server sent (a 503 is a response, not an error, to an HTTP
// client): a final one (a 4xx) over a retriable one (a 5xx), and among equals the last to
// arrive; or an error when no server answered.
//
// The first attempt is sent on the calling goroutine when Next honours its context (see
// Config.NextHonoursContext), on a goroutine of its own otherwise; hedges and retries always
// run on goroutines of their own.
//
// A panic in Config.Observer, Config.Policy.Observer or Config.Policy.Classify ends the call
// (every attempt cancelled, every response closed) and reaches the caller of RoundTrip as a
// *[hedge.PanicError].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.classify == nil { // NewTransport always sets it
		closeBody(req)
		return nil, fmt.Errorf("%w: Transport used without NewTransport (its zero value is not usable)", ErrConfig)
	}
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("hedgehttp: nil Request.URL")
	}
	if v := req.Header["Upgrade"]; len(v) > 0 && v[0] != "" { // Header.Get, without canonicalising a canonical key
		// A protocol switch hands the connection to the caller: nothing to race or replay.
		return t.once(req)
	}
	if sch := req.URL.Scheme; sch != "http" && sch != "https" && t.stdNext() {
		// net/http speaks http and https itself; another scheme is a protocol registered
		// with RegisterProtocol, or fails at once ("unsupported protocol scheme"). Either
		// way there is nothing to race, and retries of a request no transport can send
		// would only wait out their backoffs, spend the budget and count for the breaker.
		return t.once(req)
	}
	h, err := t.hostFor(req)
	if errors.Is(err, perkey.ErrFull) {
		// MaxKeys dependencies have policies: this one is sent as a request that may not be
		// sent twice would be, without one.
		t.overKeys.Add(1)
		return t.overMaxKeys(req)
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	ctx := req.Context()
	st := h.state.Load()
	sent := req
	if _, ok := req.Header[TriggerHeader]; ok {
		if sent, ctx, err = withTriggerHeader(req); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	if _, ok := req.Header[AttemptHeader]; ok {
		// The caller's own mark (a proxy that forwards its client's headers) is not this
		// call's: its first attempt is no copy, and a Queue would serve it in the hedged lane.
		if sent == req {
			cp := *req
			cp.Header = req.Header.Clone()
			sent = &cp
		}
		delete(sent.Header, AttemptHeader)
	}
	var pool *replica.Pool
	if t.cfg.Replicas != nil {
		if addrs := t.cfg.Replicas(h.name); len(addrs) > 0 {
			if pool, err = h.poolFor(addrs, t.cfg.Replica); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	} else if t.cfg.ReplicaGroups != nil {
		if groups := t.cfg.ReplicaGroups(h.name); len(groups) > 0 {
			if pool, err = h.poolForGroups(groups, t.cfg.Replica); err != nil {
				closeBody(req)
				return nil, err
			}
		}
	}
	if pool == nil && req.URL.Host == "" && t.stdNext() {
		// No replica gives it an address, and net/http sends no request without a host:
		// it fails at once ("no Host in request URL"), and must not be retried as if the
		// dependency had failed.
		return t.once(req)
	}
	if t.streams != nil {
		if !h.streaming.Load() || h.streamPool.Load() != pool {
			t.streams.follow(h, req, pool)
		} else if !h.used.Load() {
			h.used.Store(true)
		}
	}
	var c *call
	if pool == nil {
		c = &call{t: t, h: h, req: sent, signals: st.signals}
	} else {
		w := &withReplicas{call: call{t: t, h: h, req: sent, signals: st.signals}, rep: replicaCall{pool: pool}}
		w.rep.used = w.rep.usedBuf[:0]
		w.call.rep = &w.rep
		c = &w.call
	}

	ctx, err = c.repeatability(ctx, st.repeat)
	if err != nil {
		return nil, err
	}

	do := hedge.DoDetached[*http.Response]
	if t.inline {
		do = hedge.DoInlineDetached[*http.Response]
	}
	c.Context = ctx
	resp, hold, err := do(c, st.policy, runAttempt, t.discardFn)
	c.over.Store(true)
	for c.copying.Load() != 0 {
		runtime.Gosched() // an attempt copying the request: a clone, and its body (GetBody), from done
	}
	if c.body() == nil && c.bodyOwned.CompareAndSwap(false, true) {
		// No attempt took the caller's body, and none can take it now: close it here
		// (an attempt starting late, after the caller gave up, finds it taken and fails).
		closeBody(req)
	}
	if err == nil {
		switch b := resp.Body.(type) {
		case nil:
			hold.Release()
		case *attemptBody:
			b.hold = hold // one wrapper for both: the attempt's and the call's
		default:
			if b == http.NoBody || resp.Request != nil && resp.Request == c.first {
				// No body, or the first attempt's request went out on the caller's own
				// context (HTTP/1, see call.attempt): nothing of the winner's context reaches
				// the body, which the caller's context alone governs, as with a plain round
				// trip. Released now, the winner's state serves the next call at once.
				hold.Release()
			} else {
				c.won = body{rc: b, hold: hold}
				resp.Body = &c.won
			}
		}
		resp.Request = req // the caller's request, as http.Transport does, not the attempt's clone
		return resp, nil
	}
	hold.Release()
	if req.Context().Err() == nil {
		if se := lastStatusError(err); se != nil {
			se.Response.Request = req
			return se.Response, nil
		}
	}
	return nil, err
}

// overMaxKeys sends once a request to a dependency beyond Config.MaxKeys: to a replica drawn
// at random when Replicas (or the first group of ReplicaGroups) lists some for it, since its
// URL's host may be a name only they resolve, and to its URL otherwise. With no policy there
// is no health to pick by.
func (t *Transport) overMaxKeys(req *http.Request) (*http.Response, error) {
	var addrs []string
	if t.cfg.Replicas != nil || t.cfg.ReplicaGroups != nil {
		name := canonicalName(req)
		if t.cfg.Key != nil {
			name = t.cfg.Key(req)
		}
		if t.cfg.Replicas != nil {
			addrs = t.cfg.Replicas(name)
		} else {
			for _, g := range t.cfg.ReplicaGroups(name) {
				if len(g.Addrs) > 0 {
					addrs = g.Addrs
					break
				}
			}
		}
	}
	if len(addrs) == 0 {
		return t.once(req)
	}
	r := *req // the caller's request is not changed
	if r.Host == "" {
		r.Host = r.URL.Host // as an attempt to a replica keeps it (call.attempt)
	}
	u := *r.URL
	u.Host = addrs[rand.IntN(len(addrs))]
	r.URL = &u
	if u.Scheme == "https" {
		if n, ok := t.replicaTLS(r.Host, u.Host); ok {
			return t.onceVia(n.next, &r)
		}
	}
	return t.once(&r)
}

// once sends req through Next alone, unhedged and unretried. The headers meant for this
// Transport go no further, as on any other request: a trigger header is checked and dropped
// (it has nothing to decide here), and an attempt mark that is not this call's is dropped
// too.
func (t *Transport) once(req *http.Request) (*http.Response, error) {
	return t.onceVia(t.next, req)
}

// onceVia is once through next.
func (t *Transport) onceVia(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	_, hasTrigger := req.Header[TriggerHeader]
	_, hasMark := req.Header[AttemptHeader]
	if !hasTrigger && !hasMark {
		return next.RoundTrip(req)
	}
	sent := req
	if hasTrigger {
		var err error
		if sent, _, err = withTriggerHeader(req); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	if hasMark {
		if sent == req {
			cp := *req
			cp.Header = req.Header.Clone()
			sent = &cp
		}
		delete(sent.Header, AttemptHeader)
	}
	return next.RoundTrip(sent)
}

// stdNext reports whether Next is net/http's own Transport, whose rules for the requests it
// can send (a scheme of http or https, a host) are known here; another RoundTripper may send
// what it likes.
func (t *Transport) stdNext() bool {
	_, ok := t.next.(*http.Transport)
	return ok
}

// repeatability decides whether the call may be sent more than once and, when it may not,
// returns ctx marked so for the core. Buffering a body that cannot be replayed may fail.
func (c *call) repeatability(ctx context.Context, op hedge.Repeatability) (context.Context, error) {
	req := c.req
	// Repeatability: the caller's explicit word wins; then the operation's (op: PolicyFor's); then
	// the method or an idempotency key;
	// then the body must be replayable.
	said := hedge.RepeatabilityFrom(ctx)
	rep := said
	if rep == hedge.RepeatableDefault {
		rep = op
	}
	repeatable := rep == hedge.Repeatable ||
		rep == hedge.RepeatableDefault && (repeatableMethod(req.Method) || hasIdempotencyKey(req.Header))
	if repeatable && req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		if err := c.bufferBody(); err != nil {
			return ctx, err
		}
		repeatable = c.body() != nil
	}
	if !repeatable && said != hedge.NotRepeatable {
		// Tell the core, whose gate then suppresses hedges and retries. (A repeatable call
		// needs nothing: Do's default is repeatable.)
		ctx = hedge.WithRepeatable(ctx, false)
	}
	return ctx, nil
}

// lastStatusError returns the failing response to give the caller when every attempt
// failed: the one the core names as the most informative (a permanent 4xx over a 5xx, then
// the last to answer), else the last failing response of any attempt. err is a
// *hedge.AttemptsError, or a *StatusError itself.
func lastStatusError(err error) *StatusError {
	var ae *hedge.AttemptsError
	if errors.As(err, &ae) {
		var se *StatusError
		if errors.As(ae.Err, &se) {
			return se
		}
		for i := len(ae.Attempts) - 1; i >= 0; i-- {
			var se *StatusError
			if errors.As(ae.Attempts[i], &se) {
				return se
			}
		}
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// discard drains and closes, in a goroutine of its own, the response of an attempt that
// answered after its call was decided, so that its connection is reused. The goroutine ends
// once ErrorBodyLimit bytes are read or drainTimeout has passed, whichever comes first.
func (t *Transport) discard(resp *http.Response, _ error) {
	if resp != nil && resp.Body != nil && resp.Body != http.NoBody {
		go drainAndClose(resp.Body, t.errorLimit)
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// body is the winner's response body: closing it, or reading it to the end, releases the
// winning attempt's context, which has to outlive RoundTrip for the body to be readable.
type body struct {
	rc   io.ReadCloser
	hold hedge.Hold
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		// The body is done: net/http has already put the connection back, and nothing of
		// the call may stay attached to the caller's context until it ends.
		b.hold.Release()
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.hold.Release()
	return err
}

// namedTLS is a clone of Next (an *http.Transport) that checks a server's certificate
// against one name, with its own clone for hedges kept apart (nil when Next has none).
type namedTLS struct{ next, apart *http.Transport }

// replicaTLS returns the clone of Next through which an HTTPS request whose Host header is
// hostHeader goes to a replica at addr, or false when Next itself sends it as it should.
// net/http checks a server's certificate against the URL's host, which the replica's address
// has replaced: a certificate issued to the dependency's name (the usual one, a replica's
// address being an IP address or a name of its own) would fail there. The clone checks it
// against the Host header's name (the URL's host unless Request.Host names another: the name
// a virtual host answers by, which net/http alone would not check without replicas either),
// and asks the replica for that name (SNI). Next is used as it is when it is not an
// *http.Transport, when it names the server itself (TLSClientConfig.ServerName) or does its
// own handshakes (DialTLSContext), and when the two names agree.
func (t *Transport) replicaTLS(hostHeader, addr string) (*namedTLS, bool) {
	if !t.nameReplicas {
		return nil, false
	}
	// In lower case: a name's spellings (Example.com, EXAMPLE.COM) are one name to TLS, and
	// share one clone, its connections and one place in the bound.
	name, at := strings.ToLower(hostnameOf(hostHeader)), hostnameOf(addr)
	if name == "" || strings.EqualFold(name, at) {
		return nil, false
	}
	if n, ok := t.named.Load(name); ok {
		return n, true
	}
	n, err := t.named.LoadOrAdd(name, func() (*namedTLS, error) { return t.newNamedTLS(name), nil })
	return n, err == nil // full (2 × MaxKeys names): Next as it is
}

// newNamedTLS clones Next to check certificates against name.
func (t *Transport) newNamedTLS(name string) *namedTLS {
	c := t.h1.Clone() // sets Next's HTTP/2 up first, if its first request has not
	if c.Protocols == nil {
		// HTTP/2 as Next speaks it: net/http turns it on by itself only for a Transport with no
		// TLS config, which Next has now (its HTTP/2 set-up wrote one, offering h2) and the
		// clone would copy, turning it off; and an HTTP/2 of x/net's keeps its connections
		// in Next's pool (see cloneApart).
		h2 := c.TLSNextProto["h2"] != nil || c.TLSNextProto == nil && c.TLSClientConfig != nil && slices.Contains(c.TLSClientConfig.NextProtos, "h2")
		if c.TLSNextProto["h2"] != nil {
			c.TLSNextProto = nil
		}
		c.ForceAttemptHTTP2 = c.ForceAttemptHTTP2 || h2
	}
	if c.TLSClientConfig == nil {
		c.TLSClientConfig = &tls.Config{}
	}
	c.TLSClientConfig.ServerName = name
	n := &namedTLS{next: c}
	if t.apart != nil {
		n.apart = cloneApart(c)
	}
	return n
}

// hostnameOf is host:port without the port (and an IPv6 literal without its brackets).
func hostnameOf(hostport string) string {
	u := url.URL{Host: hostport}
	return u.Hostname()
}

// cloneApart is a clone of next for hedges that must not ride their primary's connections.
// Clone copies an "h2" upgrade that next's user installed (golang.org/x/net/http2's
// ConfigureTransport does): that function hands every connection it is given to one pool
// of its own, next's, so the clone's hedges would go back on their primary's HTTP/2
// connection. The clone drops it and speaks net/http's own HTTP/2, with next's HTTP2
// settings, on connections of its own.
func cloneApart(next *http.Transport) *http.Transport {
	c := next.Clone()
	if c.TLSNextProto["h2"] != nil {
		// All of the map goes (x/net puts an "unencrypted_http2" entry of the same pool
		// beside it): a map without "h2" would turn net/http's HTTP/2 off, while the TLS
		// config, which still offers h2, lets servers choose it.
		c.TLSNextProto = nil
		c.ForceAttemptHTTP2 = true
	}
	return c
}
