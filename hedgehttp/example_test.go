package hedgehttp_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
	"github.com/hedgekit/hedge/hedgehttp"
)

// A Transport is built once and shared, like http.Transport: each host it calls gets its own
// policy, which learns that host's latency. AtQuantile(0.95) hedges a call once it has run
// longer than 95% of recent calls to the same host (after 20 samples).
func ExampleNewTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)},
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}

	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	for host, m := range tr.Measured() {
		fmt.Printf("%s: %d call, warm %v\n", host[:len("http://127.0.0.1")], m.Calls, m.Warm)
	}
	// Output:
	// hello
	// http://127.0.0.1: 1 call, warm false
}

// When the first attempt is slow, the hedge answers. Here the server keeps every first
// attempt waiting until its client cancels it, and answers hedges at once: the hedge wins,
// and the loser is cancelled on the server too. The server sees which attempt it serves in
// the Hedge-Attempt header.
func ExampleTransport_hedge() {
	cancelled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get(hedgehttp.AttemptHeader); a != "" {
			fmt.Fprintf(w, "answered by attempt %s", a)
			return
		}
		<-r.Context().Done() // the slow primary: it waits until it loses
		close(cancelled)
	}))
	defer srv.Close()

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy: hedge.Config{
			Trigger: hedge.After(5 * time.Millisecond), // a fixed delay keeps the example short
			Budget:  budget.Config{Off: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-cancelled
	fmt.Println(string(body))
	for _, m := range tr.Measured() {
		fmt.Printf("hedges started %d, won %d\n", m.HedgesStarted, m.HedgesWon)
	}
	// Output:
	// answered by attempt 1
	// hedges started 1, won 1
}

// A POST is sent exactly once unless it carries an Idempotency-Key (or its context is marked
// with hedge.WithRepeatable): only then may a copy go out. The server here keeps a first
// attempt waiting until it is cancelled or the client has decided not to hedge.
func ExampleTransport_idempotencyKey() {
	decided := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // on HTTP/1.1, a cancelled client is noticed once the body is read
		if r.Header.Get(hedgehttp.AttemptHeader) != "" {
			io.WriteString(w, "hedge")
			return
		}
		select {
		case <-r.Context().Done():
		case <-decided:
			io.WriteString(w, "primary")
		}
	}))
	defer srv.Close()
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.After(5 * time.Millisecond), Budget: budget.Config{Off: true}},
		Observer: func(host string, e hedge.Event) {
			if e.Kind == hedge.HedgeSuppressed {
				fmt.Println("hedge suppressed:", e.Reason)
				decided <- struct{}{}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"", "order-42"} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"item": 42}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("key %q: answered by the %s\n", key, body)
	}
	// Output:
	// hedge suppressed: not_repeatable
	// key "": answered by the primary
	// key "order-42": answered by the hedge
}

// A Queue in front of a handler bounds the requests it runs at once. A request whose
// client has gone leaves the queue without running; when the queue is full, the answer is a
// 503 with Retry-After, which a hedging client takes as an overload signal.
func ExampleQueue() {
	started, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "done")
	})
	q, err := hedgehttp.NewQueue(slow, hedgehttp.QueueConfig{
		Workers: 1,  // one request runs at a time...
		Queue:   -1, // ...and none waits: a busy server says so at once
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(q)
	defer srv.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Get(srv.URL + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	resp, err := http.Get(srv.URL + "/other")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "Retry-After:", resp.Header.Get("Retry-After"))
	close(release)
	<-done
	s := q.Stats()
	fmt.Printf("admitted %d, rejected %d\n", s.Admitted, s.Rejected)
	// Output:
	// 503 Retry-After: 1
	// admitted 1, rejected 1
}
