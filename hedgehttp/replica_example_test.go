package hedgehttp_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/breaker"
	"github.com/hedgekit/hedge/hedgehttp"
)

// With Replicas, each attempt goes to a healthy replica its call has not used. A replica that
// refuses connections costs its calls nothing: a refused attempt never reached the server, so
// it is resent at once to another replica, without spending the budget or counting against
// the breaker, and the replica is soon ejected.
func ExampleConfig_replicas() {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	down := "127.0.0.1:1" // nothing listens here: connections are refused
	addrs := []string{down, up.Listener.Addr().String()}

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy:   hedge.Config{Trigger: hedge.AtQuantile(0.95), Breaker: &breaker.Config{}},
		Key:      func(*http.Request) string { return "users" },
		Replicas: func(string) []string { return addrs },
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()

	answered := 0
	for range 40 {
		resp, err := client.Get("http://users.internal/")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answered++
		}
	}
	fmt.Println(answered, "of 40 calls answered")
	fmt.Println("refusing replica ejected:", tr.Replicas("users").Set().Ejected(time.Now(), 0))
	fmt.Println("breaker:", tr.Measured()["users"].Breaker)

	// When no replica can be reached, calls fail fast and say why.
	addrs = []string{down}
	_, err = client.Get("http://users.internal/")
	fmt.Println(errors.Is(err, hedge.ErrUnreachable))
	// Output:
	// 40 of 40 calls answered
	// refusing replica ejected: true
	// breaker: closed
	// true
}
