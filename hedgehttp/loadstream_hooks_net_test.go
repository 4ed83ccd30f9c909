package hedgehttp

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamErrors records what Config.LoadStreamError is told.
type streamErrors struct {
	mu   sync.Mutex
	errs []error
	addr []string
}

func (s *streamErrors) tell(addr string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
	s.addr = append(s.addr, addr)
}

// find returns the first error that contains want, and the address it came with.
func (s *streamErrors) find(want string) (error, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, err := range s.errs {
		if strings.Contains(err.Error(), want) {
			return err, s.addr[i]
		}
	}
	return nil, ""
}

func (s *streamErrors) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs)
}

// A server whose middleware wants credentials answers a load stream without them with 401:
// LoadStreamError says so (it was silent), and LoadStreamRequest adds them, after which the
// reports arrive and nothing fails. A stream the Transport stops at Close is no failure.
func TestTransportLoadStreamRequestAndError(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			checkGoroutines(t)
			seen := watchReports(t)
			ls := newLoadStream(t, time.Millisecond)
			defer ls.Close()
			mux := http.NewServeMux()
			mux.Handle(LoadStreamPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer secret" {
					http.Error(w, "who are you?", http.StatusUnauthorized)
					return
				}
				ls.ServeHTTP(w, r)
			}))
			mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
			srv, base := startServer(t, proto, mux)
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}

			var refused streamErrors
			tr, err := NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond, LoadStreamError: refused.tell})
			if err != nil {
				t.Fatal(err)
			}
			getOK(t, &http.Client{Transport: tr}, srv.URL)
			if !waitFor(5*time.Second, func() bool { err, _ := refused.find("401"); return err != nil }) {
				t.Fatalf("a stream refused with 401: LoadStreamError told %d errors, none naming the status", refused.count())
			}
			if err, addr := refused.find("401"); !errors.Is(err, ErrLoadStream) || addr != u.Host {
				t.Errorf("LoadStreamError(%q, %v): want the server's address %q and an error wrapping ErrLoadStream", addr, err, u.Host)
			}
			tr.Close()
			if _, n := seen.get(u.Host); n != 0 {
				t.Fatalf("%d reports from a stream without credentials", n)
			}

			var failed streamErrors
			tr, err = NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond, LoadStreamError: failed.tell,
				LoadStreamRequest: func(r *http.Request) { r.Header.Set("Authorization", "Bearer secret") }})
			if err != nil {
				t.Fatal(err)
			}
			getOK(t, &http.Client{Transport: tr}, srv.URL)
			if !waitFor(5*time.Second, func() bool { _, n := seen.get(u.Host); return n >= 5 }) {
				_, n := seen.get(u.Host)
				t.Fatalf("%d reports from a stream with credentials, want 5", n)
			}
			tr.Close()
			if n := failed.count(); n != 0 {
				err, _ := failed.find("")
				t.Errorf("LoadStreamError told %d errors (the first: %v) of a stream that worked until Close", n, err)
			}
		})
	}
}

// A panic in LoadStreamRequest fails that opening, which LoadStreamError is told of; a panic
// in LoadStreamError is dropped. Neither reaches the process, and the stream is tried again.
// A server with no stream is named too.
func TestTransportLoadStreamHooksPanic(t *testing.T) {
	checkGoroutines(t)
	mux := http.NewServeMux()
	mux.Handle(LoadStreamPath, http.NotFoundHandler()) // a server with no stream
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv, base := startServer(t, "HTTP/1.1", mux)
	var told streamErrors
	var opened sync.Mutex
	openings := 0
	tr, err := NewTransport(Config{Next: base, LoadReportInterval: time.Millisecond,
		LoadStreamRequest: func(*http.Request) {
			opened.Lock()
			defer opened.Unlock()
			if openings++; openings == 1 {
				panic("no credentials today")
			}
		},
		LoadStreamError: func(addr string, err error) {
			told.tell(addr, err)
			panic("and no logger either")
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	getOK(t, &http.Client{Transport: tr}, srv.URL)
	if !waitFor(5*time.Second, func() bool { err, _ := told.find("404"); return err != nil }) {
		t.Fatalf("LoadStreamError told %d errors, none of the server's 404 after the panic:\n%s", told.count(), &told)
	}
	if err, _ := told.find("panicked: no credentials today"); !errors.Is(err, ErrLoadStream) {
		t.Errorf("the panic of LoadStreamRequest: told %v, want an error wrapping ErrLoadStream that names it", err)
	}
}

func (s *streamErrors) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, e := range s.errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}
