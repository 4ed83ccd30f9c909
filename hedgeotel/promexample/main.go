// Command promexample shows a hedging HTTP client's metrics in Prometheus.
//
// It starts a service on loopback whose answers take about 5 ms, and 2 % of them 100–200 ms,
// sends it a bounded number of requests through a hedging client whose metrics go to the
// OpenTelemetry Prometheus exporter, prints the hedge_* series of one scrape and, with
// -hold, keeps serving /metrics for a Prometheus server to scrape. The README beside it
// lists the queries that answer "is hedging paying off?".
//
//	go run . -requests 2000
//	go run . -listen 127.0.0.1:9464 -hold 10m
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgehttp"
	"github.com/hedgekit/hedge/hedgeotel"
)

func main() {
	requests := flag.Int("requests", 2000, "requests to send (at most 100000)")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve /metrics on (loopback)")
	hold := flag.Duration("hold", 0, "keep serving /metrics this long after the requests (for a Prometheus server)")
	flag.Parse()
	if err := run(os.Stdout, *requests, *listen, *hold); err != nil {
		log.Fatal(err)
	}
}

// run is the example, top to bottom: the dependency, the metrics pipeline, the hedging client,
// the requests and the scrape. It is long because it is read as one story, as an Example is.
func run(out io.Writer, requests int, listen string, hold time.Duration) error {
	requests = min(max(requests, 1), 100000)

	// The dependency: a loopback service with occasional hiccups. The answer to a request
	// that lost the race is cancelled with its connection.
	svc := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := 5 * time.Millisecond
		if rand.Float64() < 0.02 {
			d = 100*time.Millisecond + rand.N(100*time.Millisecond)
		}
		select {
		case <-time.After(d):
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	})}
	svcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go svc.Serve(svcLn)
	defer svc.Close()

	// Metrics: the OpenTelemetry SDK with the Prometheus exporter as its reader.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer provider.Shutdown(context.Background())

	metricsLn, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	metricsSrv := &http.Server{Handler: mux}
	go metricsSrv.Serve(metricsLn)
	defer metricsSrv.Close()

	// The hedging client, wired to the provider in one call.
	tr, err := hedgeotel.NewTransport(provider, hedgehttp.Config{
		Policy: hedge.Config{Trigger: hedge.AtQuantile(0.95)},
	})
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}

	url := "http://" + svcLn.Addr().String() + "/"
	sem := make(chan struct{}, 8) // at most 8 requests in flight
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range requests {
		<-tick.C
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			resp, err := client.Get(url)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	for range cap(sem) {
		sem <- struct{}{}
	}

	if err := printScrape(out, "http://"+metricsLn.Addr().String()+"/metrics"); err != nil {
		return err
	}
	if hold > 0 {
		fmt.Fprintf(out, "serving http://%s/metrics for %v\n", metricsLn.Addr(), hold)
		time.Sleep(hold)
	}
	return nil
}

// printScrape prints the hedge_* series of one scrape, leaving out the histogram buckets.
func printScrape(out io.Writer, url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "hedge_") && !strings.Contains(line, "_bucket{") {
			fmt.Fprintln(out, line)
		}
	}
	return sc.Err()
}
