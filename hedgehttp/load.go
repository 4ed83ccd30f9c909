package hedgehttp

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/replica"
	"github.com/hedgekit/hedge/workqueue"
)

// LoadHeader is the response header in which a [Queue] reports its load on every response
// of a request it ran (and on the 503 of one it turned away, full), and from which a
// [Transport] reads it. Its value is a dictionary in the
// syntax of RFC 8941 (Structured Field Values), for example
//
//	Hedge-Load: queued=3, busy=16, workers=16, wait=12.5
//
// queued is how many requests wait for a worker, busy how many workers run a request (the
// answered one among them) of workers in all, and wait how long the answered request waited
// for its worker, in milliseconds; a figure that is 0 may be left out (FormatLoad leaves out
// every one but workers). The figures are taken when the handler writes its response
// header (or returns without writing), so a response reports the queue as it stands when it
// leaves the server. On a 503 of a full queue the request held no worker (busy does not count
// it) and the report has no wait. Unknown keys are ignored and a missing one reads as 0, so the header can
// grow.
//
// A header of our own rather than Server-Timing: Server-Timing carries durations for people
// reading a browser's developer tools, and a queue length in it would be a duration that is
// not one; proxies and browsers may also expose it to pages. A server behind a proxy that
// strips unknown headers sends no report, and its clients decide from latency alone, as
// without it.
const LoadHeader = "Hedge-Load"

// FormatLoad returns l as a [LoadHeader] value. A figure that is 0 is left out (a parser reads
// a missing key as 0), but for workers, which every value carries: every byte of a header is
// read, checked and copied on both sides of every response, and an idle server's report is
// then "busy=1, workers=16".
func FormatLoad(l workqueue.Load) string {
	var b [80]byte
	s := b[:0]
	if l.Queued != 0 {
		s = append(s, "queued="...)
		s = strconv.AppendInt(s, int64(l.Queued), 10)
		s = append(s, ", "...)
	}
	if l.Busy != 0 {
		s = append(s, "busy="...)
		s = strconv.AppendInt(s, int64(l.Busy), 10)
		s = append(s, ", "...)
	}
	s = append(s, "workers="...)
	s = strconv.AppendInt(s, int64(l.Workers), 10)
	if us := max(l.Wait.Microseconds(), 0); us > 0 {
		s = append(s, ", wait="...)
		s = strconv.AppendInt(s, us/1000, 10)
		if f := us % 1000; f != 0 {
			s = append(s, '.')
			s = append(s, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
			for s[len(s)-1] == '0' {
				s = s[:len(s)-1]
			}
		}
	}
	return string(s)
}

// ParseLoad reads a [LoadHeader] value. ok is false when v holds none of its keys, or one of
// them does not parse.
func ParseLoad(v string) (l hedge.Load, ok bool) {
	for v != "" {
		var item string
		item, v = cutMember(v)
		key, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		if i := strings.IndexByte(val, ';'); i >= 0 {
			val = val[:i] // a parameter: none is defined
		}
		var n *int
		switch key {
		case "queued":
			n = &l.Queued
		case "busy":
			n = &l.Busy
		case "workers":
			n = &l.Workers
		case "wait":
			ms, err := strconv.ParseFloat(val, 64)
			if err != nil || !(ms >= 0 && ms <= 1e9) { // NaN too
				return hedge.Load{}, false
			}
			// Rounded: 1.001 ms in float64 is a shade under 1,001,000 ns, which a conversion
			// alone would truncate to 1,000,999.
			l.Wait, ok = time.Duration(math.Round(ms*float64(time.Millisecond))), true
			continue
		default:
			continue
		}
		x, err := strconv.Atoi(val)
		if err != nil || x < 0 {
			return hedge.Load{}, false
		}
		*n, ok = x, true
	}
	return l, ok
}

// cutMember splits a structured-field dictionary (RFC 8941) at its first member: the text up
// to the first comma outside a quoted string, and the rest after that comma. A key this
// package does not know may one day carry a string, and a comma or a "queued=" inside it is
// not a member of the dictionary.
func cutMember(v string) (member, rest string) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++ // the escaped character, a quote or a backslash
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// loadWriter adds the queue's load report to a response when its header is written. It
// passes Flush (with its error), ReadFrom and WriteString through, and Unwrap gives
// http.ResponseController the writer underneath for the rest.
type loadWriter struct {
	http.ResponseWriter
	q        *Queue
	wait     time.Duration
	reported bool
	value    [1]string // the header's value, in the same allocation
}

// report sets the header, once, with the queue's load now.
func (w *loadWriter) report() {
	if !w.reported {
		w.reported = true
		w.value[0] = w.q.reportValue(w.q.core.Counts(w.wait))
		w.ResponseWriter.Header()[LoadHeader] = w.value[:]
	}
}

func (w *loadWriter) WriteString(s string) (int, error) {
	w.report()
	return io.WriteString(w.ResponseWriter, s)
}

func (w *loadWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.report() // an informational response is not the answer, and carries no report
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *loadWriter) Write(p []byte) (int, error) {
	w.report()
	return w.ResponseWriter.Write(p)
}

func (w *loadWriter) ReadFrom(r io.Reader) (int64, error) {
	w.report()
	return io.Copy(w.ResponseWriter, r) // the writer's own ReadFrom, when it has one
}

func (w *loadWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls: the flush of the writer underneath,
// found through its Unwrap when it has no Flush of its own (a middleware's writer of the Go
// 1.20 kind), and its error, which a streaming handler needs to see that its client has gone.
func (w *loadWriter) FlushError() error {
	w.report()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *loadWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reportValue returns l as a [LoadHeader] value. A response whose request waited for no
// worker, from a queue where nobody waits, shows only how many workers are busy: its value is
// one of a few strings, each made once and shared by every such response. Formatting and
// allocating the value was the larger part of what the report cost a quick handler
// (BenchmarkQueueLoadReport), and a queue that is not full answers most requests so.
func (q *Queue) reportValue(l workqueue.Load) string {
	if l.Queued != 0 || l.Wait >= time.Microsecond || uint(l.Busy) >= uint(len(q.steady)) {
		return FormatLoad(l)
	}
	p := &q.steady[l.Busy]
	if s := p.Load(); s != nil {
		return *s
	}
	s := FormatLoad(l)
	p.Store(&s)
	return s
}

// maxSteadyReports bounds the steady reports a Queue keeps (see reportValue): one for each
// count of busy workers up to it; past that, each response formats its own.
const maxSteadyReports = 256

// serveReporting runs the handler with its response carrying the queue's load, and reports
// it on return for a handler that wrote nothing (net/http then writes the header itself).
func (q *Queue) serveReporting(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	lw := &loadWriter{ResponseWriter: w, q: q, wait: wait}
	q.next.ServeHTTP(lw, r)
	lw.report()
}

// noteLoad hands the load report of an attempt's response, if it carries one, to the core:
// to the host's policy (the backlog gate) and to its replicas (where a copy goes). ri is the
// replica the attempt went to, or -1 without replicas.
func (c *call) noteLoad(ri int, resp *http.Response) {
	v := resp.Header[LoadHeader]
	if len(v) == 0 {
		return
	}
	s := v[0]
	if len(v) > 1 {
		// One field on several lines is one dictionary, its lines joined with commas (RFC 8941,
		// section 4.2): a later line's key replaces an earlier one's.
		s = strings.Join(v, ",")
	}
	l, ok := ParseLoad(s)
	if !ok {
		return
	}
	now := time.Now()
	c.h.Policy().ReportLoad(now, max(ri, 0), l)
	if ri >= 0 {
		c.rep.pool.Set().ReportLoad(now, ri, replica.Load{Queued: l.Queued, Busy: l.Busy, Workers: l.Workers, Wait: l.Wait})
	}
}
