package hedgehttp_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/replica"
)

// With ReplicaGroups, each call's first attempt goes to the first group (here the local zone's
// two replicas), and a hedge or retry to another replica of the same group while one is
// healthy: the remote zone is reached only when no local replica can serve.
func ExampleConfig_replicaGroups() {
	var served [3]atomic.Int64 // two local replicas, one remote
	addrs := make([]string, len(served))
	for i := range served {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served[i].Add(1)
			io.WriteString(w, "ok")
		}))
		defer srv.Close()
		addrs[i] = srv.Listener.Addr().String()
	}
	local, remote := addrs[:2], addrs[2:]
	zones := []replica.Group{{Addrs: local}, {Addrs: remote}}

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		ReplicaGroups: func(string) []replica.Group {
			return zones // [{Addrs: local}, {Addrs: remote}], the same slice until it changes
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	for range 100 {
		resp, err := client.Get("http://users.internal/")
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	fmt.Println("both local replicas served:", served[0].Load() > 0 && served[1].Load() > 0)
	fmt.Println("remote replica served:", served[2].Load())
	// Output:
	// both local replicas served: true
	// remote replica served: 0
}
