package hedgehttp_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/hedgekit/hedge/hedgehttp"
)

// A Queue reports its load on every response of a request it ran, in the Hedge-Load header: a
// hedgehttp.Transport reads it and sends no hedge while the queue it would wait in is long,
// and sends one to the replica with the shortest queue. ParseLoad reads it for other clients.
func ExampleQueue_loadReport() {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	q, err := hedgehttp.NewQueue(api, hedgehttp.QueueConfig{Workers: 4})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(q)
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	v := resp.Header.Get(hedgehttp.LoadHeader)
	l, _ := hedgehttp.ParseLoad(v)
	fmt.Println(v)
	fmt.Printf("%d queued, %d of %d workers busy\n", l.Queued, l.Busy, l.Workers)
	// Output:
	// busy=1, workers=4
	// 0 queued, 1 of 4 workers busy
}
