package hedgehttp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/replica"
)

var emptyBudget = budget.Config{Ratio: budget.Zero, MinPerSecond: budget.Zero}

// refusingAddr returns a loopback address nothing listens on: connections to it are refused.
func refusingAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startCountingServer is startServer for a server that counts its open connections.
func startCountingServer(t testing.TB, proto string, h http.Handler) (*httptest.Server, *http.Transport, *atomic.Int32) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	open := countConns(s)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	if proto == "HTTP/2" {
		s.EnableHTTP2 = true
		s.StartTLS()
		tr.TLSClientConfig = s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		tr.ForceAttemptHTTP2 = true
	} else {
		s.Start()
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		s.Close()
	})
	return s, tr, open
}

// countConns makes srv, not yet started, count its open connections.
func countConns(srv *httptest.Server) *atomic.Int32 {
	var open atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	return &open
}

// breakerWatch is an observer that counts the times a policy's breaker left the closed state.
type breakerWatch struct{ opened atomic.Int32 }

func (b *breakerWatch) observe(_ string, e hedge.Event) {
	if e.Kind == hedge.BreakerChanged && e.State != breaker.Closed.String() {
		b.opened.Add(1)
	}
}

// runCalls makes n calls to url from a few workers, bounded in time, and returns how many
// succeeded with a 200 and the errors of the others.
func runCalls(t *testing.T, tr *Transport, url string, n int) (ok int, errs []error) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	deadline := time.Now().Add(30 * time.Second)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				var err error
				if time.Now().After(deadline) {
					err = errors.New("out of time")
				} else {
					var resp *http.Response
					resp, err = tr.RoundTrip(mustRequest(t, "GET", fmt.Sprintf("%s/?call=%d", url, i), nil))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
				}
				mu.Lock()
				if err == nil {
					ok++
				} else {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, errs
}

// Two replicas, one refusing connections, the default budget and a breaker: a refused
// attempt is resent at once to the healthy replica, the dead one is ejected, and the breaker
// never opens.
func TestOneReplicaRefusing(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var slow atomic.Int32
			srv, base, open := startCountingServer(t, proto, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// One primary in ten is slow enough to be hedged.
				if r.Header.Get(AttemptHeader) == "" && strings.HasSuffix(r.URL.Query().Get("call"), "7") {
					slow.Add(1)
					select {
					case <-time.After(60 * time.Millisecond):
					case <-r.Context().Done():
					}
				}
				io.WriteString(w, "ok")
			}))
			addrs := []string{refusingAddr(t), srv.Listener.Addr().String()}
			var bw breakerWatch
			tr := newTransport(t, Config{
				Policy:   hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Breaker: &breaker.Config{}},
				Next:     base,
				Key:      func(*http.Request) string { return "svc" },
				Replicas: func(string) []string { return addrs },
				Observer: bw.observe,
			})
			const calls = 300
			ok, errs := runCalls(t, tr, srv.URL, calls)
			if ok < calls*99/100 {
				t.Errorf("%d of %d calls succeeded, want at least 99%%; errors: %v", ok, calls, errs[:min(len(errs), 5)])
			}
			if n := bw.opened.Load(); n > 0 {
				t.Errorf("the breaker left the closed state %d times with one replica healthy", n)
			}
			m := tr.Measured()["svc"]
			if m.HedgesStarted == 0 || slow.Load() == 0 {
				t.Errorf("no hedges (%d slow primaries): the test did not exercise them", slow.Load())
			}
			pool := tr.Replicas("svc")
			if pool == nil {
				t.Fatal("no replicas recorded")
			}
			// Losers end after their calls: wait for them.
			waitFor(5*time.Second, func() bool { return pool.Set().Outstanding(0)+pool.Set().Outstanding(1) == 0 })
			if st := pool.Set().Stats(time.Now(), 0); !st.Ejected || st.Outstanding != 0 || pool.Set().Outstanding(1) != 0 {
				t.Errorf("refusing replica %+v, healthy one %d outstanding; want the first ejected, nothing outstanding", st, pool.Set().Outstanding(1))
			}
			// A connection can reach the idle pool just after a close: close until none is left.
			if !waitFor(5*time.Second, func() bool { tr.CloseIdleConnections(); return open.Load() == 0 }) {
				t.Errorf("%d server connections still open", open.Load())
			}
		})
	}
}

// When every replica refuses, calls fail fast with an error that wraps hedge.ErrUnreachable
// and names the refusals; the breaker stays out of it, so every call says why.
func TestAllReplicasRefusing(t *testing.T) {
	checkGoroutines(t)
	addrs := []string{refusingAddr(t), refusingAddr(t)}
	var bw breakerWatch
	tr := newTransport(t, Config{
		Policy:   hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Breaker: &breaker.Config{}},
		Next:     &http.Transport{},
		Key:      func(*http.Request) string { return "svc" },
		Replicas: func(string) []string { return addrs },
		Observer: bw.observe,
	})
	defer tr.CloseIdleConnections()
	start := time.Now()
	for i := range 20 {
		resp, err := tr.RoundTrip(mustRequest(t, "GET", "http://svc.test/", nil))
		if err == nil {
			resp.Body.Close()
			t.Fatal("call succeeded with every replica refusing")
		}
		if !errors.Is(err, hedge.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("call %d: error %q; want one naming the refusals and wrapping ErrUnreachable", i, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("20 calls took %v; want them to fail fast", d)
	}
	if n := bw.opened.Load(); n > 0 {
		t.Errorf("the breaker opened on refusals")
	}
}

// HTTP/2, one host: a hedge whose response breaks its connection (headers over the client's
// limit) must not take the primary down with it.
func TestHedgeOffPrimaryConnection(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("share=%v", share), func(t *testing.T) {
			checkGoroutines(t)
			hedged := make(chan struct{}, 16)
			s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(AttemptHeader) != "" {
					w.Header().Set("X-Big", strings.Repeat("x", 64<<10))
					w.WriteHeader(http.StatusOK)
					hedged <- struct{}{}
					return
				}
				select { // the primary answers once its hedge has broken
				case <-hedged:
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Second):
				}
				io.WriteString(w, "primary")
			}))
			s.Config.ErrorLog = log.New(io.Discard, "", 0)
			open := countConns(s)
			s.EnableHTTP2 = true
			s.StartTLS()
			defer s.Close()
			base := &http.Transport{
				TLSClientConfig:        s.Client().Transport.(*http.Transport).TLSClientConfig.Clone(),
				ForceAttemptHTTP2:      true,
				MaxResponseHeaderBytes: 16 << 10,
			}
			tr := newTransport(t, Config{
				Policy:           hedge.Config{Trigger: hedge.After(20 * time.Millisecond), Breaker: &breaker.Config{}},
				Next:             base,
				ShareConnections: share,
			})
			good := 0
			var last error
			for range 5 {
				resp, err := tr.RoundTrip(mustRequest(t, "GET", s.URL, nil))
				if err != nil {
					last = err
					continue
				}
				checkProto(t, "HTTP/2", resp)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					last = err
				} else if string(body) == "primary" {
					good++
				}
			}
			t.Logf("share=%v: %d of 5 calls returned the primary's answer; last error: %v", share, good, last)
			if !share && good != 5 {
				t.Errorf("%d of 5 calls returned the primary's answer; last error: %v", good, last)
			}
			if share && good == 5 {
				t.Log("sharing one connection, the broken hedge spared its primary: the scenario no longer reproduces")
			}
			if !waitFor(5*time.Second, func() bool { tr.CloseIdleConnections(); return open.Load() == 0 }) {
				t.Errorf("%d server connections still open", open.Load())
			}
		})
	}
}

// selfSigned returns a TLS certificate for 127.0.0.1 that no client trusts.
func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A replica whose TLS handshake fails is, like one that refuses connections, never sent the
// request: the attempt is resent at once to the other replica, and the budget is untouched.
func TestTLSFailureResentToAnotherReplica(t *testing.T) {
	checkGoroutines(t)
	good, base, _ := startCountingServer(t, "HTTP/2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	var reached atomic.Int32
	bad := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	bad.Config.ErrorLog = log.New(io.Discard, "", 0)
	bad.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	bad.StartTLS()
	defer bad.Close()
	addrs := []string{bad.Listener.Addr().String(), good.Listener.Addr().String()}
	tr := newTransport(t, Config{
		// No budget at all: a resend must not need one.
		Policy:   hedge.Config{Budget: emptyBudget},
		Next:     base,
		Key:      func(*http.Request) string { return "svc" },
		Replicas: func(string) []string { return addrs },
		// In turn, so that the failing replica gets its share of first attempts however
		// slowly its handshakes fail on a busy machine (p2c would avoid it while they are
		// outstanding).
		Replica: replica.Config{Balancer: replica.RoundRobin},
	})
	defer tr.CloseIdleConnections()
	ok, errs := runCalls(t, tr, good.URL, 20)
	if ok != 20 {
		t.Fatalf("%d of 20 calls succeeded; errors: %v", ok, errs)
	}
	if reached.Load() != 0 {
		t.Fatalf("the replica with the untrusted certificate served %d requests", reached.Load())
	}
	if !tr.Replicas("svc").Set().Ejected(time.Now(), 0) {
		t.Error("the replica whose handshakes fail is not ejected")
	}
}
