package hedgehttp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serverProcessEnv names the server a test binary started by BenchmarkLoadReportServerCPU
// serves: "off", "report" or "fixed-header", with an "h2-" prefix for HTTP/2 in clear text.
const serverProcessEnv = "HEDGEHTTP_BENCH_SERVER"

// serverWrapEnv, when set, is a command line that BenchmarkLoadReportServerCPU starts each
// server process under, the server's own command appended: a way to count its instructions.
const serverWrapEnv = "HEDGEHTTP_BENCH_SERVER_WRAP"

// BenchmarkLoadReportServerCPU measures what the load report costs the server alone. In
// BenchmarkLoadReportPaired the servers share a process with their client, so its CPU time
// and wall time mix the client's work with the server's: net/http's HTTP/2 client, for one,
// canonicalizes and allocates the name of every header it does not know, on every response.
// A handler's throughput, once its CPUs are the limit, is the inverse of the server's CPU time
// per request, so here each server runs in a process of its own (this test binary started
// again, TestLoadReportServerProcess), and the client asks each, before and after each of its
// blocks, for the CPU time that process has used. The servers and the blocks are those of
// BenchmarkLoadReportPaired: a Queue of 64 workers in front of the handler that sets its
// Content-Type, without the report (off) and with it (report), or without it and the handler
// setting a fixed header of the report's size (fixed-header: the floor of any header on every
// response); blocks of 25 calls from each of GOMAXPROCS goroutines, the order alternating.
// It reports each server's CPU time per call (server-cpu-off-ns, server-cpu-ns), their
// overhead (server-cpu-overhead-%) and that of the blocks' wall time (wall-overhead-%).
//
//	go test -c -o /tmp/hh.test ./hedgehttp
//	for i in $(seq 8); do /tmp/hh.test -test.run '^$' -test.bench 'BenchmarkLoadReportServerCPU' -test.benchtime 800x | grep Benchmark; done
//
// The CPU time of a loopback call varies from one block to the next by more than the report
// costs. The servers' instructions vary far less: with HEDGEHTTP_BENCH_SERVER_WRAP, each
// server runs under the command it names, such as cachegrind, which counts them, and the
// difference between two runs of different lengths is what the calls between cost:
//
//	for n in 80 480; do GOGC=off HEDGEHTTP_BENCH_SERVER_WRAP="valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/tmp/cg.$n.%q{HEDGEHTTP_BENCH_SERVER}" \
//	  /tmp/hh.test -test.run '^$' -test.bench 'BenchmarkLoadReportServerCPU' -test.benchtime ${n}x; done
//	grep -H summary /tmp/cg.*
func BenchmarkLoadReportServerCPU(b *testing.B) {
	if cpuTime() == 0 {
		b.Skip("no process CPU time on this platform")
	}
	for _, on := range []string{"report", "fixed-header", "h2-report", "h2-fixed-header"} {
		b.Run(on, func(b *testing.B) {
			h2 := strings.HasPrefix(on, "h2-")
			off := "off"
			if h2 {
				off = "h2-off"
			}
			benchServerProcesses(b, startServerProcess(b, off), startServerProcess(b, on), h2)
		})
	}
}

// TestLoadReportServerProcess is the server process of BenchmarkLoadReportServerCPU, and is
// skipped in any other run. It serves on a loopback port, writes the port's address as its
// first line of output, and answers each line on its input with the CPU time, in
// nanoseconds, that its process has used. It stops when its input ends.
func TestLoadReportServerProcess(t *testing.T) {
	kind := os.Getenv(serverProcessEnv)
	if kind == "" {
		t.Skip("run by BenchmarkLoadReportServerCPU only")
	}
	h2 := strings.HasPrefix(kind, "h2-")
	typed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = textPlain
		io.WriteString(w, "ok")
	})
	var h http.Handler = typed
	report := false
	switch strings.TrimPrefix(kind, "h2-") {
	case "off":
	case "report":
		report = true
	case "fixed-header":
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()[LoadHeader] = idleLoad
			typed(w, r)
		})
	default:
		t.Fatalf("%s=%q: want off, report or fixed-header, with h2- or without", serverProcessEnv, kind)
	}
	q, err := NewQueue(h, QueueConfig{Workers: 64, NoLoadReport: !report})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: q}
	if h2 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Println(ln.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(int64(cpuTime()))
	}
	srv.Close()
	if err := <-done; err != http.ErrServerClosed {
		t.Fatal(err)
	}
}

// serverProcess is a server of BenchmarkLoadReportServerCPU in a process of its own, and a
// client for it.
type serverProcess struct {
	kind string
	rt   *http.Transport
	req  *http.Request
	ask  io.Writer
	cpu  *bufio.Scanner
}

// startServerProcess starts this test binary again as the server kind serves (see
// TestLoadReportServerProcess) and returns a client for it; the process ends with b.
func startServerProcess(b *testing.B, kind string) *serverProcess {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{exe, "-test.run", "^TestLoadReportServerProcess$", "-test.count", "1"}
	if wrap := strings.Fields(os.Getenv(serverWrapEnv)); len(wrap) > 0 {
		args = append(wrap, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), serverProcessEnv+"="+kind)
	cmd.Stderr = os.Stderr
	ask, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rt := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(func() {
		rt.CloseIdleConnections()
		ask.Close() // the server stops at the end of its input
		if err := cmd.Wait(); err != nil {
			b.Errorf("server process %s: %v", kind, err)
		}
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		b.Fatalf("server process %s wrote no address: %v", kind, lines.Err())
	}
	addr := lines.Text()
	if h, _, err := net.SplitHostPort(addr); err != nil || h != "127.0.0.1" {
		b.Fatalf("server process %s: address %q, want one on 127.0.0.1", kind, addr)
	}
	if strings.HasPrefix(kind, "h2-") {
		rt.Protocols = new(http.Protocols)
		rt.Protocols.SetUnencryptedHTTP2(true)
	}
	req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
	if err != nil {
		b.Fatal(err)
	}
	return &serverProcess{kind: kind, rt: rt, req: req, ask: ask, cpu: lines}
}

// cpuTime asks the server process for the CPU time it has used.
func (s *serverProcess) cpuTime(b *testing.B) time.Duration {
	if _, err := io.WriteString(s.ask, "\n"); err != nil {
		b.Fatalf("server process %s: %v", s.kind, err)
	}
	if !s.cpu.Scan() {
		b.Fatalf("server process %s ended: %v", s.kind, s.cpu.Err())
	}
	ns, err := strconv.ParseInt(s.cpu.Text(), 10, 64)
	if err != nil {
		b.Fatalf("server process %s: %v", s.kind, err)
	}
	return time.Duration(ns)
}

// benchServerProcesses alternates blocks of calls to off and on, after checking that on's
// responses carry the header and off's do not, and that each is served over the protocol
// asked for.
func benchServerProcesses(b *testing.B, off, on *serverProcess, h2 bool) {
	for _, s := range []*serverProcess{off, on} {
		resp, err := s.rt.RoundTrip(s.req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if has, want := resp.Header.Get(LoadHeader) != "", s != off; has != want {
			b.Fatalf("%s: a response with %s %q, want one: %v", s.kind, LoadHeader, resp.Header.Get(LoadHeader), want)
		}
		if (resp.ProtoMajor == 2) != h2 {
			b.Fatalf("%s: served over %s", s.kind, resp.Proto)
		}
	}
	const block = 25
	par := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, par)
	for g := range bufs {
		bufs[g] = make([]byte, 512)
	}
	var wall, cpu [2]time.Duration
	var calls int
	run := func(i int, s *serverProcess, timed bool) {
		c0, t0 := s.cpuTime(b), time.Now()
		var wg sync.WaitGroup
		for g := range par {
			wg.Go(func() {
				for range block {
					if err := roundTrip(s.rt, s.req, bufs[g]); err != nil {
						b.Error(err) // not Fatal: this is not the benchmark's goroutine
						return
					}
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		if timed {
			wall[i] += time.Since(t0)
			cpu[i] += s.cpuTime(b) - c0
			if i == 0 {
				calls += block * par
			}
		}
	}
	alternateBlocks(b, func(timed bool) { run(0, off, timed) }, func(timed bool) { run(1, on, timed) })
	b.ReportMetric(float64(cpu[0])/float64(calls), "server-cpu-off-ns")
	b.ReportMetric(float64(cpu[1])/float64(calls), "server-cpu-ns")
	b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "server-cpu-overhead-%")
	b.ReportMetric(100*(float64(wall[1])/float64(wall[0])-1), "wall-overhead-%")
}
