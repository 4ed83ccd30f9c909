// Package hedgeconfig loads per-operation hedging policies from a YAML or JSON file, so the
// policy a service runs is data that can be reviewed, diffed, and simulated before it is
// deployed (hedgesim -config).
//
// A file has a defaults block and operations keyed by what the transport already knows: an
// HTTP host, optionally with a port and a path prefix, or a gRPC method:
//
//	defaults:
//	  trigger: quantile 0.95
//	  budget: {ratio: 0.1}
//	  limit: {}
//	operations:
//	  api.example.com:
//	    trigger: after 40ms
//	  api.example.com/v1/search:
//	    attempts: 3
//	    idempotent: true
//	  /users.v1.Users/Get:
//	    trigger: quantile 0.95 backlog_ratio=1.5 minimum_delay=5ms
//	    breaker: {failure_ratio: 0.3, degraded_at: 0.8}
//
// Each operation starts from the defaults and overrides the fields it sets (inside a block
// such as budget or breaker too); the most specific operation that matches a request wins.
// Every data field of [hedge.Config] has a key, its Go name in snake case
// (NeverHedgeSheddable is never_hedge_sheddable, RTTTolerance rtt_tolerance); durations are Go
// durations ("20ms", "1m30s"). The trigger is its text form ([hedge.Trigger.MarshalText]),
// settings included: "quantile 0.95", "quantile 0.95 window=1m backlog_ratio=off",
// "start-aware 0.95", "after 20ms", "tied tie_delay=2ms", "none". An operation that sets the
// trigger replaces the defaults' trigger and its settings. off is [hedge.Off] wherever a
// number may be off (jitter: off; budget: {off: true} turns the budget off). A block that is
// off by default (breaker, limit) is turned on by a mapping of its fields, or by true for its
// defaults, and off by false; local_saturation is a duration (5ms), 0 for off. idempotent: true
// makes every request of the operation repeatable (a POST may be hedged), false none of them
// (not even a GET), null or absent leaves it to the method.
//
// Operation names are compared as the transports match requests: hosts in any case, paths
// in their clean form without a trailing slash (x/v1, x/v1/ and x//v1 are one operation), so
// two names that would match the same requests are an error, not a second operation that
// never matches.
//
// A file with nothing in it (empty, blank, comments only, a lone ---) is an error: a policy
// file that lost its content would otherwise load as the defaults and silently drop every
// breaker and limit; write "defaults: {}" for the defaults alone. Unknown keys, values of the
// wrong type (a whole number too long for its field included) and values a policy would
// refuse are errors too; each error is an [*Error] naming the file, the line (whenever the
// input has one), the column and the field.
//
// [Watch] keeps a running service's policies up to date with its file, without a restart.
package hedgeconfig

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	pathpkg "path"
	"strconv"
	"strings"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// ErrInvalid is wrapped by every error about a file's content.
var ErrInvalid = errors.New("hedgeconfig: invalid file")

// Error is a problem at one place in a file.
type Error struct {
	File         string // the file's name, as given to Parse or Load
	Line, Column int    // 1-based; Column is 0 when the YAML parser gave only a line
	Field        string // the key path, e.g. operations["api.example.com"].budget.ratio; "" for the document
	Err          error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns ErrInvalid and the underlying error (for example one wrapping
// hedge.ErrInvalidConfig).
func (e *Error) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// File is a loaded policy file. Its methods only read it, so one File may serve any number
// of goroutines (the functions of [File.HTTPConfig] run on every request).
type File struct {
	// Defaults is the policy of every request no operation matches, and the base of every
	// operation. Its Name is "defaults".
	Defaults Operation
	// Operations are the file's operations, in file order, each with the defaults applied.
	Operations []Operation
}

// Operation is one named policy of a file.
type Operation struct {
	// Name is the operation's key as written in the file: "api.example.com",
	// "api.example.com:8443/v1/search", "/users.v1.Users/Get", "/users.v1.Users/".
	Name string
	// Policy is the operation's policy configuration, defaults applied. Build one
	// hedge.Policy from it per process, once.
	Policy hedge.Config
	// Repeatable is what idempotent says: hedge.Repeatable (true), hedge.NotRepeatable
	// (false) or hedge.RepeatableDefault (absent or null: decided by the request).
	Repeatable hedge.Repeatability

	match matcher
}

// DefaultsName is the name of the defaults block, for [File.Lookup].
const DefaultsName = "defaults"

// Load reads and parses the file at path (YAML, or JSON, which is YAML too).
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Lookup returns the operation named name as written in the file, or the defaults for
// "defaults" (which is why Parse refuses an operation of that name).
func (f *File) Lookup(name string) (Operation, bool) {
	if name == DefaultsName {
		return f.Defaults, true
	}
	for _, op := range f.Operations {
		if op.Name == name {
			return op, true
		}
	}
	return Operation{}, false
}

// Names lists the operations' names, in file order.
func (f *File) Names() []string {
	names := make([]string, len(f.Operations))
	for i, op := range f.Operations {
		names[i] = op.Name
	}
	return names
}

// matchHTTP returns the most specific HTTP operation for a request to host (without
// port, lower case), port and path, or nil.
func (f *File) matchHTTP(host, port, path string) *Operation {
	var best *Operation
	bestScore := -1
	for i := range f.Operations {
		op := &f.Operations[i]
		if s := op.match.httpScore(host, port, path); s > bestScore {
			best, bestScore = op, s
		}
	}
	return best
}

// ForHTTP returns the operation a request to u's host and path falls under: the most
// specific HTTP operation that matches (a longer path prefix beats a shorter one, a port
// beats none), or the defaults.
func (f *File) ForHTTP(r *http.Request) Operation {
	host, port, path := requestParts(r)
	if op := f.matchHTTP(host, port, path); op != nil {
		return *op
	}
	return f.Defaults
}

// ForMethod returns the operation a gRPC call to fullMethod ("/package.Service/Method")
// falls under: the method's own operation, else its service's ("/package.Service/"), else
// the defaults. It is what a gRPC interceptor's per-method configuration is built from.
func (f *File) ForMethod(fullMethod string) Operation {
	var best *Operation
	bestScore := -1
	for i := range f.Operations {
		op := &f.Operations[i]
		if s := op.match.grpcScore(fullMethod); s > bestScore {
			best, bestScore = op, s
		}
	}
	if best != nil {
		return *best
	}
	return f.Defaults
}

// HTTPConfig returns a [hedgehttp.Config] that runs the file: each request is keyed by the
// operation it falls under (see [File.ForHTTP]), each operation has its own policy and
// repeatability, and a host no operation names gets a policy of its own built from the
// defaults (keyed scheme://host:port). Set Next, Replicas, Observer and the other transport
// fields on the result as usual.
func (f *File) HTTPConfig() hedgehttp.Config {
	byName := make(map[string]*Operation, len(f.Operations))
	for i := range f.Operations {
		byName[f.Operations[i].Name] = &f.Operations[i]
	}
	return hedgehttp.Config{
		Policy: f.Defaults.Policy,
		Key:    f.httpKey,
		PolicyFor: func(key string) (hedge.Config, hedge.Repeatability) {
			if op, ok := byName[key]; ok {
				return op.Policy, op.Repeatable
			}
			return f.Defaults.Policy, f.Defaults.Repeatable
		},
	}
}

// httpKey is File.HTTPConfig's Key: the name of the operation r falls under, or
// scheme://host:port for a host no operation names.
func (f *File) httpKey(r *http.Request) string {
	host, port, path := requestParts(r)
	if op := f.matchHTTP(host, port, path); op != nil {
		return op.Name
	}
	return r.URL.Scheme + "://" + joinHostPort(host, port)
}

func requestParts(r *http.Request) (host, port, path string) {
	u := r.URL
	host = strings.ToLower(u.Hostname())
	port = u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	// The path in its clean form, as operation names are kept (parseName): a request to
	// x//v1 or x/a/./v1 falls under the operation x/v1 or x/a/v1. Clean allocates nothing for
	// a path that is clean already.
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return host, port, pathpkg.Clean(p)
}

func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	return host + ":" + port
}

// matcher is an operation's key, parsed.
type matcher struct {
	grpc           bool
	service        string // gRPC: "package.Service"
	method         string // gRPC: "Method", or "" for the whole service
	host, port     string // HTTP; port "" matches any
	path           string // HTTP path prefix; "" matches any
	portSpecificty int
}

// parseName parses an operation's key.
func parseName(name string) (matcher, error) {
	if name == "" || strings.TrimSpace(name) != name {
		return matcher{}, fmt.Errorf("operation name %q: want a host such as api.example.com[:port][/path] or a gRPC method such as /package.Service/Method", name)
	}
	if strings.Contains(name, "://") {
		return matcher{}, fmt.Errorf("operation name %q: write the host without a scheme", name)
	}
	if strings.HasPrefix(name, "/") {
		rest := name[1:]
		service, method, ok := strings.Cut(rest, "/")
		if !ok || service == "" || strings.Contains(method, "/") {
			return matcher{}, fmt.Errorf("operation name %q: a gRPC operation is /package.Service/Method or /package.Service/", name)
		}
		return matcher{grpc: true, service: service, method: method}, nil
	}
	hostport, path, hasPath := strings.Cut(name, "/")
	if hasPath {
		path = "/" + path
	}
	host, port := hostport, ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host, port = hostport[:i], hostport[i+1:]
		n, err := strconv.Atoi(port)
		if port == "" || strings.Trim(port, "0123456789") != "" || err != nil || n < 1 || n > 65535 {
			return matcher{}, fmt.Errorf("operation name %q: the port must be a number from 1 to 65535", name)
		}
		port = strconv.Itoa(n) // one form: h:080 is h:80
	}
	bracketed := strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || strings.ContainsAny(host, " \t?#@%[]") || strings.Contains(host, ":") && !bracketed {
		// A colon in a host is an IPv6 address's, which a URL writes in brackets ([::1]:8080).
		return matcher{}, fmt.Errorf("operation name %q: want a host such as api.example.com[:port][/path], an IPv6 address in brackets", name)
	}
	if strings.ContainsAny(path, "?#%") {
		// Requests are matched by their decoded path, without query or fragment: a name with
		// these would never match.
		return matcher{}, fmt.Errorf("operation name %q: a path is matched as requests spell it decoded, without a query: no ?, # or %%", name)
	}
	if path != "" {
		// One form for each prefix, so that names the transports would match alike are
		// seen to be the same (x/v1, x/v1/ and x//v1 are one operation).
		path = strings.TrimSuffix(pathpkg.Clean(path), "/")
	}
	m := matcher{host: strings.ToLower(host), port: port, path: path}
	if port != "" {
		m.portSpecificty = 1
	}
	return m, nil
}

// httpScore is how specifically m matches a request (higher wins), or -1.
func (m matcher) httpScore(host, port, path string) int {
	if m.grpc || m.host != host || (m.port != "" && m.port != port) {
		return -1
	}
	if m.path != "" && path != m.path && !strings.HasPrefix(path, m.path+"/") {
		return -1
	}
	return 2*len(m.path) + m.portSpecificty
}

// grpcScore is how specifically m matches a gRPC method (higher wins), or -1.
func (m matcher) grpcScore(fullMethod string) int {
	if !m.grpc {
		return -1
	}
	service, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok || service != m.service {
		return -1
	}
	switch m.method {
	case "":
		return 0
	case method:
		return 1
	}
	return -1
}

// GRPCMethods is a file's gRPC operations in the shape hedgegrpc.Config takes them:
//
//	g := policies.GRPC()
//	interceptor, err := hedgegrpc.NewInterceptor(hedgegrpc.Config{
//		Policy: g.Policy, Methods: g.Methods, Idempotent: g.Idempotent,
//	})
//
// (This package does not import hedgegrpc, so that a service that only speaks HTTP does not
// build gRPC.)
type GRPCMethods struct {
	// Policy is the defaults' policy, for every method no operation names.
	Policy hedge.Config
	// Methods holds one policy per gRPC operation, keyed as in the file: "/pkg.Service/Method"
	// or "/pkg.Service/" for every method of a service (hedgegrpc picks the most specific).
	Methods map[string]hedge.Config
	// Idempotent lists the gRPC operations whose idempotent is true (or inherited true from
	// the defaults). hedgegrpc sends every other method once unless its protobuf descriptor
	// says it is idempotent: idempotent: false cannot overrule the descriptor, and
	// idempotent: true in the defaults reaches only the methods the file names. A service
	// listed here covers every method of it, so Parse refuses a method whose idempotent is
	// false under a service whose idempotent is true.
	Idempotent []string
}

// GRPC returns the file's gRPC operations for a hedgegrpc interceptor.
func (f *File) GRPC() GRPCMethods {
	g := GRPCMethods{Policy: f.Defaults.Policy, Methods: map[string]hedge.Config{}}
	for _, op := range f.Operations {
		if !op.match.grpc {
			continue
		}
		g.Methods[op.Name] = op.Policy
		if op.Repeatable == hedge.Repeatable {
			g.Idempotent = append(g.Idempotent, op.Name)
		}
	}
	return g
}
