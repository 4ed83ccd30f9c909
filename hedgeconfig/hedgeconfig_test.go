package hedgeconfig_test

import (
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/limit"
	"github.com/hedgekit/hedge/winrate"
)

func load(t *testing.T, path string) *hedgeconfig.File {
	t.Helper()
	f, err := hedgeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadExample(t *testing.T) {
	f := load(t, "testdata/policy.yaml")
	defaults := hedge.Config{
		Trigger: hedge.AtQuantile(0.95, hedge.Adaptive{MinimumDelay: 5 * time.Millisecond}),
		Budget:  budget.Config{Ratio: 0.1, MinPerSecond: 1},
		Limit:   &limit.Config{},
		Breaker: &breaker.Config{FailureRatio: 0.5},
	}
	if !reflect.DeepEqual(f.Defaults.Policy, defaults) || f.Defaults.Name != "defaults" {
		t.Errorf("defaults = %+v, want %+v", f.Defaults.Policy, defaults)
	}
	want := map[string]struct {
		edit func(*hedge.Config)
		rep  hedge.Repeatability
	}{
		"users.internal": {func(c *hedge.Config) {
			c.Trigger = hedge.AtQuantile(0.9, hedge.Adaptive{MinimumDelay: 5 * time.Millisecond})
		}, hedge.RepeatableDefault},
		"users.internal/v1/search": {func(c *hedge.Config) {
			c.Trigger, c.Attempts, c.MaximumConcurrent = hedge.After(40*time.Millisecond), 3, 2
		}, hedge.Repeatable},
		"payments.internal:8443": {func(c *hedge.Config) { c.Trigger = hedge.Trigger{} }, hedge.NotRepeatable},
		"/inventory.v1.Inventory/": {func(c *hedge.Config) {
			c.Trigger = hedge.AtQuantile(0.95, hedge.Adaptive{MinimumDelay: 5 * time.Millisecond, WinRate: winrate.Config{Floor: 0.2}})
		}, hedge.RepeatableDefault},
		"/inventory.v1.Inventory/Reserve": {func(c *hedge.Config) { c.Breaker, c.Limit = nil, nil }, hedge.RepeatableDefault},
	}
	if got := f.Names(); len(got) != len(want) || got[0] != "users.internal" || got[4] != "/inventory.v1.Inventory/Reserve" {
		t.Errorf("names %v", got)
	}
	for name, w := range want {
		op, ok := f.Lookup(name)
		if !ok {
			t.Errorf("no operation %q", name)
			continue
		}
		c := defaults
		c.Limit = &limit.Config{}
		c.Breaker = &breaker.Config{FailureRatio: 0.5}
		w.edit(&c)
		if !reflect.DeepEqual(op.Policy, c) || op.Repeatable != w.rep {
			t.Errorf("%s = %+v %v, want %+v %v", name, op.Policy, op.Repeatable, c, w.rep)
		}
	}
	// An operation's block is its own: changing it leaves the defaults alone.
	op, _ := f.Lookup("users.internal")
	op.Policy.Limit.MaxLimit = 7
	if f.Defaults.Policy.Limit.MaxLimit != 0 {
		t.Error("operations share the defaults' blocks")
	}
}

func TestRoundTrip(t *testing.T) {
	f := load(t, "testdata/policy.yaml")
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := hedgeconfig.Parse("marshalled", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !sameFile(f, g) {
		t.Errorf("load → marshal → load changed the file:\n%s", out)
	}
	// The output is what a person would write.
	for _, part := range []string{"trigger: quantile 0.95 minimum_delay=5ms", "trigger: after 40ms", "breaker: false", "idempotent: true", "limit: true"} {
		if !strings.Contains(string(out), part) {
			t.Errorf("marshalled file has no %q:\n%s", part, out)
		}
	}
}

func sameFile(a, b *hedgeconfig.File) bool {
	if !reflect.DeepEqual(a.Defaults.Policy, b.Defaults.Policy) || a.Defaults.Repeatable != b.Defaults.Repeatable ||
		len(a.Operations) != len(b.Operations) {
		return false
	}
	for i := range a.Operations {
		x, y := a.Operations[i], b.Operations[i]
		if x.Name != y.Name || x.Repeatable != y.Repeatable || !reflect.DeepEqual(x.Policy, y.Policy) {
			return false
		}
	}
	return true
}

func TestJSON(t *testing.T) {
	src := "{\n\t\"defaults\": {\"trigger\": \"after 20ms\", \"budget\": {\"off\": true}},\n" +
		"\t\"operations\": {\"/pkg.S/M\": {\"attempts\": 3, \"idempotent\": true}}\n}\n"
	f, err := hedgeconfig.Parse("policy.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	op := f.ForMethod("/pkg.S/M")
	if op.Policy.Trigger != hedge.After(20*time.Millisecond) || !op.Policy.Budget.Off || op.Policy.Attempts != 3 || op.Repeatable != hedge.Repeatable {
		t.Errorf("op = %+v", op)
	}
	_, err = hedgeconfig.Parse("policy.json", []byte("{\n\t\"defaults\": {\"atempts\": 3}\n}"))
	if err == nil || !strings.HasPrefix(err.Error(), `policy.json:2:15: defaults.atempts: unknown field (known: trigger, attempts, maximum_concurrent, budget, backoff, breaker, limit, never_hedge_sheddable, `) ||
		!strings.Contains(err.Error(), "local_saturation") {
		t.Errorf("JSON error: %v", err)
	}
}

// intBits is the size of an int, which an int field's error names: 64 bits, or 32 on a 32-bit platform.
var intBits = strconv.Itoa(strconv.IntSize)

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown field", "defaults:\n  trigger: after 20ms\n  tirgger: after 30ms\n",
			"policy.yaml:3:3: defaults.tirgger: unknown field (known: trigger, attempts,"},
		{"unknown nested field", "operations:\n  a.example:\n    budget:\n      ratio: 0.1\n      ration: 0.2\n",
			`policy.yaml:5:7: operations["a.example"].budget.ration: unknown field (known: ratio, min_per_second, window, off)`},
		{"bad duration", "defaults:\n  overload_cooldown: 20xs\n",
			`policy.yaml:2:22: defaults.overload_cooldown: must be a duration such as 20ms or 1m30s, got "20xs"`},
		{"duration without unit", "defaults:\n  overload_cooldown: 30\n",
			"policy.yaml:2:22: defaults.overload_cooldown: must be a duration such as 20ms or 1m30s, got 30"},
		{"a setting of the trigger", "defaults:\n  trigger: quantile 0.95 window=30\n",
			`policy.yaml:2:12: defaults.trigger: hedge: invalid config: trigger "quantile 0.95 window=30": window: want a duration such as 20ms, or off, got "30"`},
		{"a setting another trigger reads", "defaults:\n  trigger: after 20ms delay=1ms\n",
			`policy.yaml:2:12: defaults.trigger: hedge: invalid config: trigger "after 20ms delay=1ms": "after" takes one argument, the delay`},
		{"a trigger setting's rule", "defaults:\n  trigger: quantile 0.95 backlog_ratio=0.5\n",
			`policy.yaml:2:12: defaults.trigger: hedge: invalid config: Trigger: Adaptive.BacklogRatio must be a finite number > 1`},
		{"off where nothing is on", "defaults:\n  attempts: off\n",
			`policy.yaml:2:13: defaults.attempts: hedge: invalid config: Attempts must be in [0, 10]`},
		{"quantile 1.5", "operations:\n  a.example:\n    trigger: quantile 1.5\n",
			`policy.yaml:3:14: operations["a.example"].trigger: hedge: invalid config: trigger "quantile 1.5": the quantile must be a number in [0.5, 1), got "1.5"`},
		{"wrong type", "defaults:\n  attempts: two\n",
			`policy.yaml:2:13: defaults.attempts: must be a whole number, got "two"`},
		{"wrong type, a list", "defaults:\n  breaker: [1, 2]\n",
			"policy.yaml:2:12: defaults.breaker: must be a mapping of fields, true or false, got a list"},
		{"float for int", "defaults:\n  attempts: 2.5\n",
			"policy.yaml:2:13: defaults.attempts: must be a whole number, got 2.5"},
		{"leading zero", "defaults:\n  attempts: 010\n",
			"policy.yaml:2:13: defaults.attempts: must not start with a zero, got 010: write it in decimal without one, or with 0o for octal"},
		{"leading zero in a number", "defaults:\n  budget: {min_per_second: -0_5}\n",
			"policy.yaml:2:28: defaults.budget.min_per_second: must not start with a zero, got -0_5"},
		{"a method not idempotent under a service that is", "operations:\n  /pay.v1.Payments/:\n    idempotent: true\n  /pay.v1.Payments/Charge:\n    idempotent: false\n",
			`policy.yaml:4:3: operations["/pay.v1.Payments/Charge"]: idempotent is false, but operations["/pay.v1.Payments/"], whose every method gRPC hedging takes for idempotent, is true (at line 2:3)`},
		{"a method not idempotent by the defaults under a service that is", "defaults:\n  idempotent: false\noperations:\n  /pay.v1.Payments/Charge:\n    attempts: 3\n  /pay.v1.Payments/:\n    idempotent: true\n",
			`policy.yaml:4:3: operations["/pay.v1.Payments/Charge"]: idempotent is false, but operations["/pay.v1.Payments/"]`},
		{"policy rule", "defaults:\n  trigger: after 20ms\n  attempts: 2\n  maximum_concurrent: 3\n",
			"policy.yaml:4:23: defaults.maximum_concurrent: hedge: invalid config: MaximumConcurrent (3) must not exceed Attempts (2)"},
		{"nested policy rule", "operations:\n  a.example:\n    breaker:\n      failure_ratio: 2\n",
			`policy.yaml:4:22: operations["a.example"].breaker.failure_ratio: hedge: invalid config: Breaker: breaker: Config.FailureRatio must be in [0, 1] or negative (rule off), got 2`},
		{"repeated key", "defaults:\n  attempts: 2\n  attempts: 3\n",
			"policy.yaml:3:3: defaults.attempts: repeated key (first at line 2:3)"},
		{"repeated operation", "operations:\n  api.example.com: {}\n  api.example.com: {}\n",
			`policy.yaml:3:3: operations["api.example.com"]: repeated key (first at line 2:3)`},
		{"repeated field of an operation", "operations:\n  api.example.com:\n    attempts: 2\n    attempts: 3\n",
			`policy.yaml:4:5: operations["api.example.com"].attempts: repeated key (first at line 3:5)`},
		{"host in another case", "operations:\n  api.example.com: {}\n  API.Example.com: {}\n",
			`policy.yaml:3:3: operations["API.Example.com"]: the same operation as operations["api.example.com"] at line 2:3`},
		{"port with a leading zero", "operations:\n  x.example:80: {}\n  x.example:080: {}\n",
			`policy.yaml:3:3: operations["x.example:080"]: the same operation as operations["x.example:80"] at line 2:3`},
		{"port out of range", "operations:\n  x.example:99999: {}\n",
			`policy.yaml:2:3: operations["x.example:99999"]: operation name "x.example:99999": the port must be a number from 1 to 65535`},
		{"IPv6 address without brackets", "operations:\n  \"::1\": {}\n",
			`policy.yaml:2:3: operations["::1"]: operation name "::1": want a host such as api.example.com[:port][/path], an IPv6 address in brackets`},
		{"path with a query", "operations:\n  x.example/v1?x=1: {}\n",
			`policy.yaml:2:3: operations["x.example/v1?x=1"]: operation name "x.example/v1?x=1": a path is matched as requests spell it decoded, without a query: no ?, # or %`},
		{"path percent-encoded", "operations:\n  x.example/a%20b: {}\n",
			`policy.yaml:2:3: operations["x.example/a%20b"]: operation name "x.example/a%20b": a path is matched as requests spell it decoded, without a query: no ?, # or %`},
		{"path with a trailing slash", "operations:\n  x.example/v1: {}\n  x.example/v1/: {}\n",
			`policy.yaml:3:3: operations["x.example/v1/"]: the same operation as operations["x.example/v1"] at line 2:3`},
		{"path not clean", "operations:\n  x.example:80/a/../v1: {}\n  X.example:80//v1: {}\n",
			`policy.yaml:3:3: operations["X.example:80//v1"]: the same operation as operations["x.example:80/a/../v1"] at line 2:3`},
		{"host and host/", "operations:\n  x.example: {}\n  x.example/: {}\n",
			`policy.yaml:3:3: operations["x.example/"]: the same operation as operations["x.example"] at line 2:3`},
		{"+Inf", "defaults:\n  backoff:\n    multiplier: .inf\n",
			"policy.yaml:3:17: defaults.backoff.multiplier: must be a finite number, got .inf"},
		{"-Inf", "operations:\n  a.example:\n    trigger: quantile 0.95 backlog_ratio=-inf\n",
			`policy.yaml:3:14: operations["a.example"].trigger: hedge: invalid config: trigger "quantile 0.95 backlog_ratio=-inf": backlog_ratio: want a number, or off, got "-inf"`},
		{"integer over 64 bits", "defaults:\n  attempts: 99999999999999999999\n",
			"policy.yaml:2:13: defaults.attempts: must be a whole number that fits in " + intBits + " bits, got 99999999999999999999"},
		{"integer just over int64", "defaults:\n  attempts: 9223372036854775808\n",
			"policy.yaml:2:13: defaults.attempts: must be a whole number that fits in " + intBits + " bits, got 9223372036854775808"},
		{"negative integer over 64 bits", "defaults:\n  attempts: -99999999999999999999\n",
			"policy.yaml:2:13: defaults.attempts: must be a whole number that fits in " + intBits + " bits, got -99999999999999999999"},
		{"invalid UTF-8", "defaults:\n  attempts: 2\n  trigger: \"after \xff\"\n",
			"policy.yaml:3:19: invalid leading UTF-8 octet"},
		{"invalid UTF-8 in a comment", "defaults:\n  attempts: 2 # \xc3\n",
			"policy.yaml:2:17: "},
		{"unknown anchor", "defaults:\n  attempts: 2\noperations:\n  a.example: *base\n",
			"policy.yaml:4:14: unknown anchor 'base' referenced"},
		{"nesting too deep on line one", strings.Repeat("[", 10001),
			"policy.yaml:1:10001: exceeded max depth of 10000"},
		{"unclosed deep nesting", "defaults:\n  attempts: " + strings.Repeat("{a: ", 10001),
			"policy.yaml:2: exceeded max depth of 10000"},
		{"control character", "defaults:\n  trigger: \x01\n",
			"policy.yaml:2:12: control characters are not allowed"},
		{"scheme in name", "operations:\n  https://a.example:\n    attempts: 2\n",
			`policy.yaml:2:3: operations["https://a.example"]: operation name "https://a.example": write the host without a scheme`},
		{"bad gRPC name", "operations:\n  /a/b/c:\n    attempts: 2\n",
			`policy.yaml:2:3: operations["/a/b/c"]: operation name "/a/b/c": a gRPC operation is /package.Service/Method or /package.Service/`},
		{"gRPC service without its slash", "operations:\n  /pkg.Service:\n    attempts: 2\n",
			`policy.yaml:2:3: operations["/pkg.Service"]: operation name "/pkg.Service": a gRPC operation is /package.Service/Method or /package.Service/`},
		{"unknown top-level key", "default:\n  attempts: 2\n",
			"policy.yaml:1:1: default: unknown key (want defaults or operations)"},
		{"not a mapping", "- 1\n- 2\n",
			"policy.yaml:1:1: the file must be a mapping with the keys defaults and operations"},
		{"idempotent", "defaults:\n  idempotent: yes\n",
			`policy.yaml:2:15: defaults.idempotent: must be true, false or null, got "yes"`},
		{"NaN", "defaults:\n  breaker: {degraded_at: .nan}\n",
			"policy.yaml:2:26: defaults.breaker.degraded_at: must be a finite number, got .nan"},
		{"syntax: a tab", "defaults:\n\tattempts: 2\n",
			"policy.yaml:2: found character that cannot start any token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hedgeconfig.Parse("policy.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("no error; want %s", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant:\n%s", err, tc.want)
			}
			var e *hedgeconfig.Error
			if !errors.As(err, &e) || !errors.Is(err, hedgeconfig.ErrInvalid) || e.File != "policy.yaml" || e.Line == 0 {
				t.Errorf("error %#v: want an *Error wrapping ErrInvalid with file and line", err)
			}
			if strings.Count(err.Error(), "policy.yaml") != 1 {
				t.Errorf("more than one error: %v", err)
			}
		})
	}
}

// A file with nothing in it is a mistake (a truncated deployment would silently drop every
// breaker and limit); one that asks for the defaults alone says so.
func TestEmptyFile(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
	}{{"", 0}, {"   \n\n", 0}, {"# nothing\n# still nothing\n", 0}, {"---\n", 2}, {"---\n# x\n...\n", 3}, {"null\n", 1}, {"\n~\n", 2}} {
		f, err := hedgeconfig.Parse("empty.yaml", []byte(tc.src))
		var e *hedgeconfig.Error
		if f != nil || !errors.As(err, &e) || !errors.Is(err, hedgeconfig.ErrInvalid) || e.Line != tc.line {
			t.Errorf("Parse(%q) = %v, %v; want an *Error wrapping ErrInvalid at line %d", tc.src, f, err, tc.line)
			continue
		}
		if !strings.Contains(err.Error(), "defaults: {} for the defaults alone") {
			t.Errorf("Parse(%q): %v; want it to say how to ask for the defaults alone", tc.src, err)
		}
	}
	for _, src := range []string{"defaults: {}\n", "defaults:\noperations:\n", "{}"} {
		f, err := hedgeconfig.Parse("defaults.yaml", []byte(src))
		if err != nil || len(f.Operations) != 0 || !reflect.DeepEqual(f.Defaults.Policy, hedge.Config{}) {
			t.Errorf("Parse(%q) = %+v, %v; want the defaults alone", src, f, err)
		}
	}
}

func TestForHTTPMostSpecificWins(t *testing.T) {
	f := load(t, "testdata/policy.yaml")
	for url, want := range map[string]string{
		"http://users.internal/v1/users/7":         "users.internal",
		"http://USERS.internal:8080/v1/search":     "users.internal/v1/search",
		"http://users.internal/v1/search/deep?q=1": "users.internal/v1/search",
		"http://users.internal/v1/searchable":      "users.internal",
		"https://payments.internal:8443/pay":       "payments.internal:8443",
		"https://payments.internal/pay":            "defaults",
		"http://elsewhere/":                        "defaults",
	} {
		r, _ := http.NewRequest("GET", url, nil)
		if got := f.ForHTTP(r).Name; got != want {
			t.Errorf("ForHTTP(%s) = %s, want %s", url, got, want)
		}
	}
	for method, want := range map[string]string{
		"/inventory.v1.Inventory/Reserve": "/inventory.v1.Inventory/Reserve",
		"/inventory.v1.Inventory/List":    "/inventory.v1.Inventory/",
		"/users.v1.Users/Get":             "defaults",
	} {
		if got := f.ForMethod(method).Name; got != want {
			t.Errorf("ForMethod(%s) = %s, want %s", method, got, want)
		}
	}
}

// An operation's path is matched in its clean form, however the file writes it.
func TestOperationPathsMatchInTheirCleanForm(t *testing.T) {
	f, err := hedgeconfig.Parse("p.yaml", []byte("operations:\n  X.example/v1//: {attempts: 3}\n  x.example/a/./b/: {attempts: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"http://x.example/v1/users": "X.example/v1//",
		"http://x.example/v1":       "X.example/v1//",
		"http://x.example/a/b/c":    "x.example/a/./b/",
		"http://x.example/v2":       "defaults",
		// Requests' paths too: the transports send them as written.
		"http://x.example//v1":         "X.example/v1//",
		"http://x.example/v1/../v1/u":  "X.example/v1//",
		"http://X.EXAMPLE/a//b/":       "x.example/a/./b/",
		"http://x.example/a/./b/c":     "x.example/a/./b/",
		"http://x.example/a/x/../b/cd": "x.example/a/./b/",
	} {
		r, _ := http.NewRequest("GET", url, nil)
		if got := f.ForHTTP(r).Name; got != want {
			t.Errorf("ForHTTP(%s) = %s, want %s", url, got, want)
		}
	}
}

// Every data field of hedge.Config, its blocks included, can be written in a file, and
// comes back from marshalling as it was.
func TestEveryFieldRoundTrips(t *testing.T) {
	src := `defaults:
  trigger: quantile 0.9 window=1m minimum_samples=50 minimum_delay=2ms maximum_delay=2s minimum_in_service=15ms backlog_ratio=1.5 win_rate.floor=0.25 win_rate.window=2m win_rate.minimum_samples=20 win_rate.minimum_allowance=0.1
  attempts: 4
  maximum_concurrent: 3
  budget: {ratio: 0.05, min_per_second: 2, window: 20s, off: false}
  backoff: {initial: 5ms, maximum: 500ms, multiplier: 1.5, jitter: off}
  breaker: {consecutive_failures: 7, failure_ratio: 0.4, window: 30s, minimum_calls: 40, open_for: 10s, half_open_calls: 2, degraded_at: 0.75}
  limit: {initial_limit: 30, min_limit: 10, max_limit: 300, smoothing: 0.1, rtt_tolerance: 2, long_window: 900, queue_size: 6}
  never_hedge_sheddable: true
  overload_cooldown: 3s
  local_saturation: 8ms
  idempotent: true
operations:
  a.example/x:
    trigger: start-aware 0.99 minimum_in_service=off
    budget: {ratio: 1e-12}
    breaker: {half_open_calls: 3}
    local_saturation: 0
    idempotent: null
`
	f, err := hedgeconfig.Parse("all.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := f.Defaults.Policy
	if d.Attempts != 4 || d.Budget.Window != 20*time.Second || d.Backoff.Multiplier != 1.5 || d.Breaker.HalfOpenCalls != 2 ||
		d.Limit.RTTTolerance != 2 || d.Breaker.DegradedAt != 0.75 || !d.NeverHedgeSheddable || d.LocalSaturation != 8*time.Millisecond ||
		d.Backoff.Jitter != hedge.Off || f.Defaults.Repeatable != hedge.Repeatable {
		t.Errorf("defaults = %+v", d)
	}
	if want := hedge.AtQuantile(0.9, hedge.Adaptive{Window: time.Minute, MinimumSamples: 50, MinimumDelay: 2 * time.Millisecond,
		MaximumDelay: 2 * time.Second, MinimumInService: 15 * time.Millisecond, BacklogRatio: 1.5,
		WinRate: winrate.Config{Floor: 0.25, Window: 2 * time.Minute, MinimumSamples: 20, MinimumAllowance: 0.1}}); d.Trigger != want {
		t.Errorf("defaults' trigger = %v, want %v", d.Trigger, want)
	}
	op := f.Operations[0]
	if op.Policy.Trigger != hedge.StartAware(0.99, hedge.Adaptive{MinimumInService: hedge.Off}) {
		t.Errorf("operation = %+v", op.Policy)
	}
	if op.Policy.Budget.Ratio != budget.Zero || op.Policy.Budget.MinPerSecond != 2 || op.Policy.Breaker.HalfOpenCalls != 3 ||
		op.Policy.Breaker.ConsecutiveFailures != 7 || op.Policy.LocalSaturation != 0 || op.Repeatable != hedge.RepeatableDefault {
		t.Errorf("operation = %+v", op.Policy)
	}
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := hedgeconfig.Parse("again.yaml", out)
	if err != nil || !sameFile(f, g) {
		t.Errorf("round trip: %v\n%s", err, out)
	}
}

func TestMarshalProgrammaticFile(t *testing.T) {
	// A File built in code marshals too, and its operations' matchers come from parsing.
	f := &hedgeconfig.File{
		Defaults: hedgeconfig.Operation{Name: "defaults", Policy: hedge.Config{Trigger: hedge.AtQuantile(0.99)}},
		Operations: []hedgeconfig.Operation{
			{Name: "a.example", Policy: hedge.Config{Trigger: hedge.Tied(), Attempts: 2, Breaker: &breaker.Config{}}, Repeatable: hedge.NotRepeatable},
		},
	}
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := hedgeconfig.Parse("m.yaml", out)
	if err != nil || !sameFile(f, g) {
		t.Fatalf("%v\n%s", err, out)
	}
	r, _ := http.NewRequest("GET", "http://a.example/", nil)
	if g.ForHTTP(r).Name != "a.example" {
		t.Error("no match after parsing")
	}
}

func parseString(src string) (*hedgeconfig.File, error) {
	return hedgeconfig.Parse("test.yaml", []byte(src))
}

// Whole numbers take the spellings YAML gives them without doubt: decimal, 0o octal, 0x hex,
// digits grouped with _; 010, which YAML 1.1 reads as 8 and YAML 1.2 as 10, is an error
// (TestErrors).
func TestNumberSpellings(t *testing.T) {
	for _, c := range []struct {
		src      string
		attempts int
	}{
		{"0", 0}, {"3", 3}, {"0o3", 3}, {"0x3", 3}, {"+3", 3}, {"0_3", -1}, {"00", -1},
	} {
		f, err := hedgeconfig.Parse("policy.yaml", []byte("defaults:\n  attempts: "+c.src+"\n"))
		if c.attempts < 0 {
			if err == nil {
				t.Errorf("attempts: %s: no error, want one for its leading zero", c.src)
			}
			continue
		}
		if err != nil {
			t.Errorf("attempts: %s: %v", c.src, err)
			continue
		}
		if got := f.Defaults.Policy.Attempts; got != c.attempts {
			t.Errorf("attempts: %s = %d, want %d", c.src, got, c.attempts)
		}
	}
}
