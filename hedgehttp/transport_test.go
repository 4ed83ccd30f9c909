package hedgehttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
)

// The tests in this file run the Transport over a fake next RoundTripper inside synctest
// bubbles: no network, fake time, deterministic. transport_net_test.go runs it against real
// servers.

// fakeNext answers attempts without a network. A first attempt (no AttemptHeader) waits
// primaryDelay of (fake) time, or until its context is done; every other attempt answers at
// once. respond, when set, builds the answer.
type fakeNext struct {
	primaryDelay time.Duration
	respond      func(r *http.Request, body string) (*http.Response, error)

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, url, attempt, host, body string
}

func (f *fakeNext) RoundTrip(r *http.Request) (*http.Response, error) {
	var body string
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = string(b)
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{r.Method, r.URL.String(), r.Header.Get(AttemptHeader), r.Host, body})
	f.mu.Unlock()
	if r.Header.Get(AttemptHeader) == "" && f.primaryDelay > 0 {
		select {
		case <-time.After(f.primaryDelay):
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	if f.respond != nil {
		return f.respond(r, body)
	}
	who := "primary"
	if r.Header.Get(AttemptHeader) != "" {
		who = "hedge"
	}
	return textResponse(r, 200, who), nil
}

func (f *fakeNext) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func textResponse(r *http.Request, code int, body string) *http.Response {
	return &http.Response{
		StatusCode:    code,
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header),
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

func TestRepeatabilityGate(t *testing.T) {
	type tc struct {
		name     string
		method   string
		key      bool
		mark     *bool // hedge.WithRepeatable
		body     io.Reader
		maxBuf   int64
		repeated bool
	}
	yes, no := true, false
	cases := []tc{
		{name: "GET", method: "GET", repeated: true},
		{name: "HEAD", method: "HEAD", repeated: true},
		{name: "OPTIONS", method: "OPTIONS", repeated: true},
		{name: "TRACE", method: "TRACE", repeated: true},
		{name: "PUT", method: "PUT", body: strings.NewReader("x"), repeated: true},
		{name: "DELETE", method: "DELETE", repeated: true},
		{name: "POST", method: "POST", body: strings.NewReader("x")},
		{name: "PATCH", method: "PATCH", body: strings.NewReader("x")},
		{name: "POST+key", method: "POST", key: true, body: strings.NewReader("x"), repeated: true},
		{name: "PATCH+key", method: "PATCH", key: true, body: strings.NewReader("x"), repeated: true},
		{name: "POST+marked", method: "POST", mark: &yes, body: strings.NewReader("x"), repeated: true},
		{name: "GET+marked unsafe", method: "GET", mark: &no},
		{name: "POST+key+marked unsafe", method: "POST", key: true, mark: &no, body: strings.NewReader("x")},
		{name: "PUT unbuffered body", method: "PUT", body: onlyReader{strings.NewReader("x")}, repeated: true},
		{name: "PUT body over MaxBodyBuffer", method: "PUT", body: onlyReader{strings.NewReader("xyz")}, maxBuf: 2},
		{name: "PUT with buffering off", method: "PUT", body: onlyReader{strings.NewReader("x")}, maxBuf: -1},
		{name: "PUT with GetBody, buffering off", method: "PUT", body: strings.NewReader("x"), maxBuf: -1, repeated: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				next := &fakeNext{primaryDelay: time.Second}
				tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, MaxBodyBuffer: c.maxBuf})
				ctx := t.Context()
				if c.mark != nil {
					ctx = hedge.WithRepeatable(ctx, *c.mark)
				}
				req, err := http.NewRequestWithContext(ctx, c.method, "http://svc.test/", c.body)
				if err != nil {
					t.Fatal(err)
				}
				if c.key {
					req.Header.Set("Idempotency-Key", "k")
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				got := readAll(t, resp)
				seen := next.requests()
				if c.repeated {
					if got != "hedge" || len(seen) != 2 {
						t.Errorf("answer %q after %d requests; want the hedge's, after 2", got, len(seen))
					}
				} else if got != "primary" || len(seen) != 1 {
					t.Errorf("answer %q after %d requests; want the primary's, sent exactly once", got, len(seen))
				}
				if c.body != nil {
					for i, s := range seen {
						if s.body != "x" && s.body != "xyz" {
							t.Errorf("request %d carried body %q", i, s.body)
						}
					}
				}
			})
		})
	}
}

// TestLargeBodySentWhole checks that a body too large to buffer is sent once, whole: the
// bytes read ahead to find its size go first.
func TestLargeBodySentWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{primaryDelay: time.Second}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, MaxBodyBuffer: 10})
		payload := strings.Repeat("abcdefghij", 5)
		body := &closeCounter{Reader: onlyReader{strings.NewReader(payload)}}
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", "http://svc.test/", body)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		seen := next.requests()
		if len(seen) != 1 || seen[0].body != payload {
			t.Fatalf("sent %d requests, first body %d bytes; want 1 request with all %d bytes", len(seen), len(seen[0].body), len(payload))
		}
		if body.closes == 0 {
			t.Error("the caller's body was never closed")
		}
	})
}

type closeCounter struct {
	io.Reader
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return nil }

func TestCallerBodyClosedWhenNothingSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pc := hedgeNow()
		pc.Breaker = &breaker.Config{ConsecutiveFailures: 1}
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			return nil, errors.New("connection refused")
		}}
		tr := newTransport(t, Config{Policy: pc, Next: next})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Fatal("want the transport error")
		}
		body := &closeCounter{Reader: strings.NewReader("x")}
		req, _ = http.NewRequestWithContext(t.Context(), "POST", "http://svc.test/", body)
		_, err := tr.RoundTrip(req)
		if !errors.Is(err, hedge.ErrBreakerOpen) {
			t.Fatalf("RoundTrip = %v, want ErrBreakerOpen", err)
		}
		if body.closes != 1 {
			t.Errorf("body closed %d times, want 1 (RoundTrip must close the body, even on errors)", body.closes)
		}
	})
}

func TestOverloadPausesHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{primaryDelay: time.Second}
		var first sync.Once
		next.respond = func(r *http.Request, _ string) (*http.Response, error) {
			is429 := false
			first.Do(func() { is429 = true })
			if is429 { // the first answer: a 429 asking for 30 s
				resp := textResponse(r, http.StatusTooManyRequests, "slow down")
				resp.Header.Set("Retry-After", "30")
				return resp, nil
			}
			return textResponse(r, 200, "ok"), nil
		}
		var reasons []hedge.Reason
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, Observer: func(key string, e hedge.Event) {
			if key != "http://svc.test:80" {
				t.Errorf("event for key %q, want http://svc.test:80", key)
			}
			if e.Kind == hedge.HedgeSuppressed {
				reasons = append(reasons, e.Reason)
			}
		}})
		get := func() string {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(resp.StatusCode, " ", readAll(t, resp))
		}
		// Call 1: the hedge gets the 429 (an overload signal), the primary's 200 wins.
		if got := get(); got != "200 ok" {
			t.Fatalf("call 1 = %q, want 200 ok", got)
		}
		// Call 2, within the 30 s: no hedge, the primary answers.
		if got := get(); got != "200 ok" || len(reasons) != 1 || reasons[0] != hedge.ReasonOverload {
			t.Fatalf("call 2 = %q, suppressed %v; want 200 ok and one suppression for overload", got, reasons)
		}
		time.Sleep(31 * time.Second) // fake time
		get()
		if n := len(next.requests()); n != 5 {
			t.Errorf("%d requests, want 5 (hedging resumes after Retry-After)", n)
		}
	})
}

func TestErrorBodyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			return textResponse(r, 500, strings.Repeat("e", 100)), nil
		}}
		pc := hedgeNow()
		pc.Trigger, pc.Attempts = hedge.Trigger{}, 1
		tr := newTransport(t, Config{Policy: pc, Next: next, ErrorBodyLimit: 10})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 500 || string(b) != "eeeeeeeeee" || !errors.Is(err, ErrBodyTruncated) {
			t.Errorf("got %d %q %v; want 500, the first 10 bytes, ErrBodyTruncated", resp.StatusCode, b, err)
		}
	})
}

func TestKeyAndMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next})
		// Back and forth between hosts and spellings: the Transport remembers the last one
		// it found, and must not give its policy to another.
		for _, u := range []string{"http://a.test/", "http://a.test:80/x", "https://a.test/", "http://b.test:8080/", "http://[::1]:9/", "http://a.test/", "http://A.Test/", "https://a.test/"} {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		m := tr.Measured()
		want := map[string]int64{"http://a.test:80": 4, "https://a.test:443": 2, "http://b.test:8080": 1, "http://[::1]:9": 1}
		if len(m) != len(want) {
			t.Errorf("Measured has %d hosts, want %d: %v", len(m), len(want), m)
		}
		for k, n := range want {
			if m[k].Calls != n {
				t.Errorf("Measured()[%q].Calls = %d, want %d", k, m[k].Calls, n)
			}
		}
		if tr.Policy("http://a.test:80") == nil || tr.Policy("http://nowhere.test:80") != nil {
			t.Error("Policy returns the wrong policies")
		}
	})
}

func TestUpgradeBypassesHedging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{primaryDelay: time.Second}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := len(next.requests()); n != 1 || len(tr.Measured()) != 0 {
			t.Errorf("upgrade sent %d times through %d policies, want once, directly", n, len(tr.Measured()))
		}
	})
}

func TestNewTransportValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ErrorBodyLimit: -1}, "Config.ErrorBodyLimit must be >= 0, got -1"},
		{Config{Policy: hedge.Config{Attempts: -1}}, "Config.Policy"},
	} {
		_, err := NewTransport(c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewTransport(%+v) = %v, want ErrConfig naming %q", c.cfg, err, c.want)
		}
	}
	if _, err := NewTransport(Config{Policy: hedge.Config{Attempts: -1}}); !errors.Is(err, hedge.ErrInvalidConfig) {
		t.Errorf("a bad policy template: %v, want it to wrap hedge.ErrInvalidConfig", err)
	}
	tr, err := NewTransport(Config{})
	if err != nil || tr.next != http.DefaultTransport {
		t.Errorf("zero Config: %v, next %T; want no error and http.DefaultTransport", err, tr.next)
	}
}

func TestClassify(t *testing.T) {
	tr := newTransport(t, Config{})
	for _, c := range []struct {
		code       int
		retryAfter string
		class      hedge.Class
		overload   bool
		ra         time.Duration
		isError    bool
	}{
		{code: 200, class: hedge.Success},
		{code: 204, class: hedge.Success},
		{code: 304, class: hedge.Success},
		{code: 400, class: hedge.Permanent, isError: true},
		{code: 404, class: hedge.Permanent, isError: true},
		{code: 408, class: hedge.Retriable, isError: true},
		{code: 429, class: hedge.Retriable, overload: true, isError: true},
		{code: 429, retryAfter: "7", class: hedge.Retriable, overload: true, ra: 7 * time.Second, isError: true},
		{code: 500, class: hedge.Retriable, isError: true},
		{code: 501, class: hedge.Permanent, isError: true},
		{code: 502, class: hedge.Retriable, isError: true},
		{code: 503, class: hedge.Retriable, isError: true},
		{code: 503, retryAfter: "2", class: hedge.Retriable, overload: true, ra: 2 * time.Second, isError: true},
		{code: 503, retryAfter: "soon", class: hedge.Retriable, isError: true},
		{code: 504, class: hedge.Retriable, isError: true},
	} {
		resp := textResponse(nil, c.code, "body")
		if c.retryAfter != "" {
			resp.Header.Set("Retry-After", c.retryAfter)
		}
		se := tr.failure(resp)
		if (se != nil) != c.isError {
			t.Errorf("%d: StatusError %v, want one: %v", c.code, se, c.isError)
			continue
		}
		var err error
		if se != nil {
			err = fmt.Errorf("wrapped: %w", se)
		}
		o := Classify(err)
		if o.Class != c.class || o.Overload != c.overload || o.RetryAfter != c.ra {
			t.Errorf("%d Retry-After %q: %+v, want class %v overload %v retry-after %v", c.code, c.retryAfter, o, c.class, c.overload, c.ra)
		}
		if se != nil && (o.Err != err || !strings.Contains(se.Error(), fmt.Sprint(c.code))) {
			t.Errorf("%d: Outcome.Err = %v, message %q", c.code, o.Err, se.Error())
		}
	}
	if o := Classify(errors.New("connection reset")); o.Class != hedge.Retriable {
		t.Errorf("transport error classified %v, want Retriable", o.Class)
	}
	if o := Classify(nil); o.Class != hedge.Success {
		t.Errorf("nil classified %v, want Success", o.Class)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v  string
		d  time.Duration
		ok bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{"99999999999999999999", time.Hour, true}, // overflows uint64: not a number...
		{"86400", time.Hour, true},                // capped
		{"-1", 0, false},
		{"1.5", 0, false},
		{"Thu, 01 Jan 2026 00:00:30 GMT", 30 * time.Second, true},
		{"Wed, 31 Dec 2025 23:00:00 GMT", 0, true}, // in the past
		{"tomorrow", 0, false},
	} {
		d, ok := parseRetryAfter(c.v, now)
		if c.v == "99999999999999999999" {
			// Too large for uint64 and not a date: refused.
			if ok {
				t.Errorf("parseRetryAfter(%q) = %v, true; want false", c.v, d)
			}
			continue
		}
		if d != c.d || ok != c.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", c.v, d, ok, c.d, c.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "-5", "Thu, 01 Jan 2026 00:00:30 GMT", "Monday, 02-Jan-06 15:04:05 MST", "x"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v, outside [0, %v]", v, d, maxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %v with ok false", v, d)
		}
	})
}

// TestRetryMarkedAndSentToNextReplica checks that a sequential retry is marked on the wire
// and goes to another replica, keeping the request's path and Host header.
func TestRetryMarkedAndSentToNextReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		next := &fakeNext{respond: func(r *http.Request, _ string) (*http.Response, error) {
			n++
			if n == 1 {
				return nil, errors.New("connection refused")
			}
			return textResponse(r, 200, "ok"), nil
		}}
		pc := hedgeNow()
		pc.Trigger, pc.Attempts = hedge.Trigger{}, 3
		tr := newTransport(t, Config{Policy: pc, Next: next,
			Key:      func(*http.Request) string { return "svc" },
			Replicas: func(string) []string { return []string{"r0:1", "r1:1", "r2:1"} }})
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/path", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		seen := next.requests()
		if len(seen) != 2 {
			t.Fatalf("%d requests, want 2", len(seen))
		}
		if seen[0].attempt != "" || seen[1].attempt != "2" && seen[1].attempt != "1" {
			t.Errorf("attempt headers %q, %q; want none on the first, the index on the retry", seen[0].attempt, seen[1].attempt)
		}
		if seen[0].url == seen[1].url || !strings.HasSuffix(seen[1].url, ":1/path") {
			t.Errorf("retry went to %s after %s, want another replica, same path", seen[1].url, seen[0].url)
		}
		if seen[0].host != "svc.test" || seen[1].host != "svc.test" {
			t.Errorf("Host headers %q, %q; want the request's own svc.test", seen[0].host, seen[1].host)
		}
	})
}

// A first attempt on the caller's goroutine that loses is cancelled at once: the call returns
// at the hedge's answer, not a loser's grace later (a test that fails if the inline first
// attempt waits out loserGrace, which would show here as 1ms + 5ms).
func TestInlineLoserDoesNotDelayTheWinner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := &fakeNext{primaryDelay: time.Second}
		tr := newTransport(t, Config{Policy: hedgeNow(), Next: next, NextHonoursContext: true})
		req, err := http.NewRequestWithContext(t.Context(), "GET", "http://svc.test/", nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if got := readAll(t, resp); got != "hedge" {
			t.Fatalf("answer %q, want the hedge's", got)
		}
		if took != time.Millisecond {
			t.Errorf("the call returned after %v; want 1ms, the moment the hedge answered", took)
		}
	})
}

// OnClose's functions run once, at the first Close, in order; one registered after Close runs
// at once.
func TestOnClose(t *testing.T) {
	tr, err := NewTransport(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ran []int
	tr.OnClose(func() { ran = append(ran, 1) })
	tr.OnClose(func() { ran = append(ran, 2) })
	if len(ran) != 0 {
		t.Fatal("ran before Close")
	}
	tr.Close()
	tr.Close()
	tr.OnClose(func() { ran = append(ran, 3) })
	if !slices.Equal(ran, []int{1, 2, 3}) {
		t.Fatalf("ran %v, want [1 2 3]", ran)
	}
}
