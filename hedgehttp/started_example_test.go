package hedgehttp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
)

// Tied requests over HTTP: a replica whose Queue starts a copy says so with a 102 Processing
// (hedgehttp.StartedStatus). A copy that has not started within TieDelay (1ms) gets a tied
// copy at another replica; the first to start cancels the other, still waiting in its
// replica's queue, which drops it without running it. Here replica b's only worker is busy:
// a copy sent to b first waits, its tie starts at a, and b's copy is dropped; a copy sent to
// a first starts at once, and no tie is sent. Either way a answers.
func ExampleTransport_tied() {
	busy, release := make(chan struct{}), make(chan struct{})
	replica := func(name string) *httptest.Server {
		q, err := hedgehttp.NewQueue(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/long" {
				close(busy)
				<-release
			}
			fmt.Fprintf(w, "answered by replica %s", name)
		}), hedgehttp.QueueConfig{Workers: 1})
		if err != nil {
			log.Fatal(err)
		}
		return httptest.NewServer(q)
	}
	a, b := replica("a"), replica("b")
	defer a.Close()
	defer b.Close()
	long := make(chan struct{})
	go func() { // occupy b's worker
		if resp, err := http.Get(b.URL + "/long"); err == nil {
			resp.Body.Close()
		}
		close(long)
	}()
	<-busy

	addrs := []string{hostOf(a.URL), hostOf(b.URL)}
	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy:   hedge.Config{Trigger: hedge.Tied()},
		Replicas: func(string) []string { return addrs },
	})
	if err != nil {
		log.Fatal(err)
	}
	var lg hedge.Log
	req, _ := http.NewRequestWithContext(hedge.WithLog(context.Background(), &lg), "GET", a.URL+"/work", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	fmt.Println(lg.Attempts[len(lg.Attempts)-1].Result) // in the order they ended: the winner last
	close(release)
	<-long
	// Output:
	// answered by replica a
	// OK
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		log.Fatal(err)
	}
	return p.Host
}
