package hedgegrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"google.golang.org/grpc/codes"
)

// ErrServiceConfig is wrapped by every error [ConfigFromServiceConfig] returns: the error
// names the field (as a JSON path) and the rule it breaks.
var ErrServiceConfig = errors.New("hedgegrpc: invalid service config")

// MaxA6Attempts caps maxAttempts in a service config's hedgingPolicy and retryPolicy, as
// gRFC A6 does: a larger value is treated as 5.
const MaxA6Attempts = 5

// ConfigFromServiceConfig reads the hedging and retry settings of a gRPC service config (the
// JSON a user gives grpc.WithDefaultServiceConfig, gRFC A6), which grpc-go itself ignores
// for hedging, and returns the [Config] that does the same through [Interceptor.DialOptions]:
//
//   - methodConfig names match as in A6: a {service, method} entry names one method, a
//     {service} entry every method of the service, an empty entry ({} or an empty service)
//     is the default for every other method. A name may appear once.
//   - hedgingPolicy {maxAttempts, hedgingDelay, nonFatalStatusCodes}: up to maxAttempts
//     copies (capped at [MaxA6Attempts]), all allowed in flight at once, one every
//     hedgingDelay (0s: all at once). A non-fatal code sends the next copy at once; any
//     other failure commits the call: it returns that status and cancels the other copies.
//   - retryPolicy {maxAttempts, initialBackoff, maxBackoff, backoffMultiplier,
//     retryableStatusCodes}: sequential retries with A6's randomised exponential backoff;
//     another code commits the call. A methodConfig with both policies is an error, as A6
//     says.
//   - retryThrottling {maxTokens, tokenRatio}: A6's tokens, shared by every method of the
//     Config: each attempt that fails with a non-fatal (or retryable) code takes a token,
//     each success gives back tokenRatio, and while tokens are at or below half of
//     maxTokens calls are sent once, unhedged and unretried. Without retryThrottling there
//     is no throttling (as in A6), and no budget either: see the README, "bring your A6
//     config", for what that risks and how to add ours (set Budget on the templates).
//
// Methods named by a hedgingPolicy or a retryPolicy, the default entry included, count as
// safe to repeat: the config says they may be sent more than once. A retry pushback
// ([PushbackKey]) is honoured as everywhere in this package. Other settings of the service
// config (loadBalancingConfig, timeouts) are not read: give the JSON to gRPC as well when
// you want them.
func ConfigFromServiceConfig(serviceConfigJSON string) (Config, error) {
	var sc struct {
		MethodConfig    []methodConfigJSON `json:"methodConfig"`
		RetryThrottling *struct {
			MaxTokens  *float64 `json:"maxTokens"`
			TokenRatio *float64 `json:"tokenRatio"`
		} `json:"retryThrottling"`
	}
	if err := json.Unmarshal([]byte(serviceConfigJSON), &sc); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrServiceConfig, err)
	}
	var th *throttle
	if t := sc.RetryThrottling; t != nil {
		switch {
		case t.MaxTokens == nil || !(*t.MaxTokens > 0 && *t.MaxTokens <= 1000):
			return Config{}, scError("retryThrottling.maxTokens", "must be in (0, 1000], got %v", deref(t.MaxTokens))
		case t.TokenRatio == nil || !(*t.TokenRatio > 0) || math.IsInf(*t.TokenRatio, 1):
			return Config{}, scError("retryThrottling.tokenRatio", "must be > 0, got %v", deref(t.TokenRatio))
		// Tokens are counted in thousandths (A6): a figure that rounds to none would never
		// give a token back, or hold every call to one attempt from the start.
		case math.Round(*t.MaxTokens*1000) < 1:
			return Config{}, scError("retryThrottling.maxTokens", "must be at least 0.001 (tokens are counted in thousandths), got %v", *t.MaxTokens)
		case math.Round(*t.TokenRatio*1000) < 1:
			return Config{}, scError("retryThrottling.tokenRatio", "must be at least 0.001 (tokens are counted in thousandths), got %v", *t.TokenRatio)
		}
		th = newThrottle(*t.MaxTokens, *t.TokenRatio)
	}
	cfg := Config{Methods: map[string]hedge.Config{}, a6: &a6Settings{throttle: th}}
	seen := map[string]bool{}
	for i, mc := range sc.MethodConfig {
		at := "methodConfig[" + strconv.Itoa(i) + "]"
		pc, ok, err := mc.policy(at, th)
		if err != nil {
			return Config{}, err
		}
		for j, n := range mc.Name {
			key, err := n.key(at + ".name[" + strconv.Itoa(j) + "]")
			if err != nil {
				return Config{}, err
			}
			if seen[key] {
				return Config{}, scError(at+".name["+strconv.Itoa(j)+"]", "names %q, already named by an earlier entry", keyName(key))
			}
			seen[key] = true
			switch {
			case key == "":
				cfg.Policy = pc
				cfg.a6.defaultRepeatable = ok
			default:
				cfg.Methods[key] = pc
				if ok {
					cfg.Idempotent = append(cfg.Idempotent, key)
				}
			}
		}
	}
	return cfg, nil
}

// a6Settings is what a Config built by ConfigFromServiceConfig carries beyond its exported
// fields.
type a6Settings struct {
	throttle          *throttle // nil: no retryThrottling
	defaultRepeatable bool      // the default entry has a policy: every method may be repeated
}

type methodConfigJSON struct {
	Name          []nameJSON `json:"name"`
	HedgingPolicy *struct {
		MaxAttempts         *int              `json:"maxAttempts"`
		HedgingDelay        *string           `json:"hedgingDelay"`
		NonFatalStatusCodes []json.RawMessage `json:"nonFatalStatusCodes"`
	} `json:"hedgingPolicy"`
	RetryPolicy *struct {
		MaxAttempts          *int              `json:"maxAttempts"`
		InitialBackoff       *string           `json:"initialBackoff"`
		MaxBackoff           *string           `json:"maxBackoff"`
		BackoffMultiplier    *float64          `json:"backoffMultiplier"`
		RetryableStatusCodes []json.RawMessage `json:"retryableStatusCodes"`
	} `json:"retryPolicy"`
}

type nameJSON struct {
	Service string `json:"service"`
	Method  string `json:"method"`
}

// key is the Methods key a name entry stands for: "" for the default.
func (n nameJSON) key(at string) (string, error) {
	switch {
	case n.Service == "" && n.Method != "":
		return "", scError(at+".method", "%q needs a service", n.Method)
	case n.Service == "":
		return "", nil
	case strings.Contains(n.Service, "/") || strings.Contains(n.Method, "/"):
		return "", scError(at, "service %q and method %q must not contain /", n.Service, n.Method)
	}
	return "/" + n.Service + "/" + n.Method, nil
}

func keyName(key string) string {
	if key == "" {
		return "the default"
	}
	return key
}

// policy is the template of one methodConfig, and whether it makes its methods repeatable.
func (mc methodConfigJSON) policy(at string, th *throttle) (hedge.Config, bool, error) {
	off := budget.Config{Off: true} // A6 bounds copies with its throttling, or not at all
	switch h, r := mc.HedgingPolicy, mc.RetryPolicy; {
	case h != nil && r != nil:
		return hedge.Config{}, false, scError(at, "has both hedgingPolicy and retryPolicy; A6 allows one")
	case h != nil:
		n, err := attempts(at+".hedgingPolicy.maxAttempts", h.MaxAttempts)
		if err != nil {
			return hedge.Config{}, false, err
		}
		delay := time.Duration(0)
		if h.HedgingDelay != nil {
			if delay, err = protoDuration(at+".hedgingPolicy.hedgingDelay", *h.HedgingDelay); err != nil {
				return hedge.Config{}, false, err
			}
		}
		set, err := codeSet(at+".hedgingPolicy.nonFatalStatusCodes", h.NonFatalStatusCodes)
		if err != nil {
			return hedge.Config{}, false, err
		}
		return hedge.Config{Trigger: hedge.After(delay), Attempts: n, MaximumConcurrent: n, Budget: off, Classify: a6Classify(set, true, th)}, true, nil
	case r != nil:
		n, err := attempts(at+".retryPolicy.maxAttempts", r.MaxAttempts)
		if err != nil {
			return hedge.Config{}, false, err
		}
		var b hedge.Backoff
		for _, d := range []struct {
			field string
			v     *string
			to    *time.Duration
		}{{"initialBackoff", r.InitialBackoff, &b.Initial}, {"maxBackoff", r.MaxBackoff, &b.Maximum}} {
			if d.v == nil {
				return hedge.Config{}, false, scError(at+".retryPolicy."+d.field, "is required")
			}
			if *d.to, err = protoDuration(at+".retryPolicy."+d.field, *d.v); err != nil {
				return hedge.Config{}, false, err
			}
			if *d.to <= 0 {
				return hedge.Config{}, false, scError(at+".retryPolicy."+d.field, "must be > 0, got %s", *d.v)
			}
		}
		if r.BackoffMultiplier == nil || !(*r.BackoffMultiplier > 0) || math.IsInf(*r.BackoffMultiplier, 1) {
			return hedge.Config{}, false, scError(at+".retryPolicy.backoffMultiplier", "must be > 0, got %v", deref(r.BackoffMultiplier))
		}
		b.Multiplier, b.Jitter = *r.BackoffMultiplier, 1 // A6: random(0, current backoff)
		if len(r.RetryableStatusCodes) == 0 {
			return hedge.Config{}, false, scError(at+".retryPolicy.retryableStatusCodes", "must name at least one code")
		}
		set, err := codeSet(at+".retryPolicy.retryableStatusCodes", r.RetryableStatusCodes)
		if err != nil {
			return hedge.Config{}, false, err
		}
		return hedge.Config{Attempts: n, Backoff: b, Budget: off, Classify: a6Classify(set, false, th)}, true, nil
	}
	return hedge.Config{Classify: a6Classify(0, false, th)}, false, nil
}

func attempts(at string, v *int) (int, error) {
	if v == nil || *v < 2 {
		return 0, scError(at, "must be at least 2, got %v", deref(v))
	}
	return min(*v, MaxA6Attempts), nil
}

// codeSet reads status codes, by name ("UNAVAILABLE") or number, into a bit set.
func codeSet(at string, cs []json.RawMessage) (uint32, error) {
	var set uint32
	for k, raw := range cs {
		var c codes.Code
		if err := c.UnmarshalJSON(raw); err != nil {
			return 0, scError(at+"["+strconv.Itoa(k)+"]", "%s is not a status code", raw)
		}
		if c == codes.OK || c > 16 {
			return 0, scError(at+"["+strconv.Itoa(k)+"]", "%v is not a failure", c)
		}
		set |= 1 << c
	}
	return set, nil
}

// protoDuration parses a protobuf JSON duration: seconds with up to nine decimals and an "s".
func protoDuration(at, s string) (time.Duration, error) {
	num, ok := strings.CutSuffix(s, "s")
	f, err := strconv.ParseFloat(num, 64)
	ns := math.Round(f * 1e9)
	// float64(math.MaxInt64) is 2^63, one past the longest Duration: a figure that rounds to
	// it would convert to the most negative one.
	if !ok || err != nil || strings.ContainsAny(num, "eEinfINFxX+") || !(f >= 0) || ns >= math.MaxInt64 {
		return 0, scError(at, "%q is not a duration such as \"0.5s\"", s)
	}
	return time.Duration(ns), nil
}

func deref[T any](p *T) any {
	if p == nil {
		return "nothing"
	}
	return *p
}

func scError(at, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrServiceConfig, at, fmt.Sprintf(format, args...))
}

// a6Classify is the classifier of an A6 method: OK wins; a code of set is Retriable (with
// hedging, it sends the next copy at once); every other code commits the call. A never-sent
// attempt is resent as always, and an overload pushback keeps its pause; a negative pushback
// ("do not retry") commits. Each attempt's result feeds the throttle, when there is one.
func a6Classify(set uint32, hedging bool, th *throttle) func(error) hedge.Outcome {
	return func(err error) hedge.Outcome {
		o := Classify(err)
		var e *attemptError
		if err == nil || o.Unsent || !errors.As(err, &e) {
			if th != nil && err == nil {
				th.success()
			}
			return o
		}
		if code := e.st.Code(); code <= 16 && set&(1<<code) != 0 && !e.stop { // the config's code, whatever Config.NonFatal says; a negative pushback still commits
			o.Class, o.Next = hedge.Retriable, hedging
			if th != nil {
				th.failure()
			}
			return o
		}
		o.Class, o.Commit, o.Next = hedge.Permanent, true, false
		return o
	}
}

// throttle is gRFC A6's retry throttling: tokens in thousandths, starting full.
type throttle struct {
	max, ratio int64 // in thousandths of a token
	tokens     atomic.Int64
}

func newThrottle(maxTokens, ratio float64) *throttle {
	t := &throttle{max: int64(math.Round(maxTokens * 1000)), ratio: int64(math.Round(ratio * 1000))}
	t.tokens.Store(t.max)
	return t
}

func (t *throttle) failure() {
	for {
		cur := t.tokens.Load()
		if cur <= 0 || t.tokens.CompareAndSwap(cur, max(cur-1000, 0)) {
			return
		}
	}
}

func (t *throttle) success() {
	for {
		cur := t.tokens.Load()
		if cur >= t.max || t.tokens.CompareAndSwap(cur, min(cur+t.ratio, t.max)) {
			return
		}
	}
}

// throttled reports whether calls must be sent once: tokens at or below half the maximum.
func (t *throttle) throttled() bool { return t != nil && t.tokens.Load()*2 <= t.max }
