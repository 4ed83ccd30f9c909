package hedgehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// These tests check, over real loopback HTTP/1.1 and HTTP/2 connections, that
// a client's cancellation reaches the queue: a queued request whose client
// cancelled never runs, and a running one sees its context cancelled.

func TestQueueNetCancelledWaiterNeverRuns(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			var ranB atomic.Int32
			releaseA := make(chan struct{})
			startedA := make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/a":
					close(startedA)
					select {
					case <-releaseA:
					case <-time.After(10 * time.Second): // bound: never hang the test
					}
				case "/b":
					ranB.Add(1)
				}
			})
			q := mustQueue(t, h, QueueConfig{Workers: 1, Queue: 4})
			srv, tr := startServer(t, proto, q)
			client := &http.Client{Transport: tr}

			doneA := make(chan error, 1)
			go func() {
				resp, err := client.Get(srv.URL + "/a")
				if err == nil {
					checkProto(t, proto, resp)
					resp.Body.Close()
				}
				doneA <- err
			}()
			<-startedA

			ctx, cancel := context.WithCancel(context.Background())
			doneB := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/b", nil)
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				doneB <- err
			}()
			if !waitFor(5*time.Second, func() bool { return q.Stats().Queued == 1 }) {
				t.Fatalf("request /b never queued: %+v", q.Stats())
			}
			cancel()
			if err := <-doneB; !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled client got %v, want context.Canceled", err)
			}
			if !waitFor(5*time.Second, func() bool { return q.Stats().Abandoned == 1 }) {
				t.Fatalf("the server never noticed the cancellation: %+v", q.Stats())
			}
			close(releaseA)
			if err := <-doneA; err != nil {
				t.Fatal(err)
			}
			if n := ranB.Load(); n != 0 {
				t.Errorf("the cancelled request ran the handler %d times, want 0", n)
			}
			if s := q.Stats(); s.Admitted != 1 || s.Queued != 0 || s.Running != 0 {
				t.Errorf("Stats = %+v, want Admitted 1 and an idle queue", s)
			}
		})
	}
}

func TestQueueNetRunningSeesCancellation(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			started := make(chan struct{})
			sawCancel := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-r.Context().Done():
					sawCancel <- r.Context().Err()
				case <-time.After(10 * time.Second):
					sawCancel <- errors.New("handler never saw the cancellation")
				}
			})
			q := mustQueue(t, h, QueueConfig{Workers: 2})
			srv, tr := startServer(t, proto, q)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
			errc := make(chan error, 1)
			go func() {
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			<-started
			cancel()
			if err := <-sawCancel; !errors.Is(err, context.Canceled) {
				t.Errorf("running handler: %v, want context.Canceled", err)
			}
			<-errc
			if !waitFor(5*time.Second, func() bool { return q.Stats().Cancelled == 1 }) {
				t.Errorf("Stats = %+v, want Cancelled 1", q.Stats())
			}
		})
	}
}

func TestQueueNetFullAnswers503(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			release := make(chan struct{})
			var started sync.WaitGroup
			started.Add(1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/block" {
					started.Done()
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
				io.WriteString(w, "ok")
			})
			q := mustQueue(t, h, QueueConfig{Workers: 1, Queue: -1, RetryAfter: 3 * time.Second})
			srv, tr := startServer(t, proto, q)
			client := &http.Client{Transport: tr}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := client.Get(srv.URL + "/block"); err == nil {
					resp.Body.Close()
				}
			}()
			started.Wait()
			resp, err := client.Get(srv.URL + "/other")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			checkProto(t, proto, resp)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
				t.Errorf("busy server answered %d Retry-After %q, want 503 and \"3\"", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			close(release)
			<-done
		})
	}
}
