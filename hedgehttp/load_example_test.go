package hedgehttp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/hedgekit/hedge"
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

// streamFailures counts the load stream failures ExampleQueue_LoadStream's Transport is told
// of (a real client would log them).
var streamFailures atomic.Int64

// A Queue's load stream sends its load to every client that opens it, every interval,
// whatever the client's share of the calls; a Transport with LoadReportInterval opens one on
// every server it calls. With streams, responses need no report of their own (NoLoadReport).
func ExampleQueue_LoadStream() {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	q, err := hedgehttp.NewQueue(api, hedgehttp.QueueConfig{Workers: 4, NoLoadReport: true})
	if err != nil {
		log.Fatal(err)
	}
	ls, err := q.LoadStream(10 * time.Millisecond) // never a report more often than this
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(hedgehttp.LoadStreamPath, ls) // beside the queue: a stream holds no worker
	mux.Handle("/", q)
	srv := &http.Server{Handler: mux}
	srv.RegisterOnShutdown(ls.Close) // or Shutdown waits for the open streams
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	url := "http://" + ln.Addr().String()

	tr, err := hedgehttp.NewTransport(hedgehttp.Config{
		Policy:             hedge.Config{Trigger: hedge.AtQuantile(0.95)},
		LoadReportInterval: 10 * time.Millisecond, // a stream on every server it calls
		// A stream's request carries no caller's headers: add what the servers' middleware
		// wants of it, and hear why a stream failed (it is opened again either way).
		LoadStreamRequest: func(r *http.Request) { r.Header.Set("Authorization", "Bearer example-token") },
		LoadStreamError:   func(server string, err error) { streamFailures.Add(1) },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close() // ends its streams
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "report on the response:", resp.Header.Get(hedgehttp.LoadHeader) != "")

	// What the Transport reads on its stream:
	resp, err = http.Get(url + hedgehttp.LoadStreamPath + "?interval=100ms")
	if err != nil {
		log.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	fmt.Print(line)

	if err := srv.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("shut down")
	// Output:
	// 200 OK report on the response: false
	// workers=4
	// shut down
}
