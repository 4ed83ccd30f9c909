package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/budget"
)

var scriptStart = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

const ms = time.Millisecond

func TestScriptCall(t *testing.T) {
	unlimited := budget.Config{Off: true}
	for _, c := range []struct {
		name    string
		cfg     hedge.Config
		script  Script
		want    string
		wantErr error
	}{
		{"fast primary, no hedge", hedge.Config{Trigger: hedge.After(20 * ms), Budget: unlimited},
			Script{Latencies: []time.Duration{10 * ms}}, "1 attempt over 10ms: OK (10ms)", nil},
		{"hedge wins", hedge.Config{Trigger: hedge.After(20 * ms), Budget: unlimited},
			Script{Latencies: []time.Duration{100 * ms, 5 * ms}}, "2 attempts over 25ms: hedge OK (5ms), at 20ms, discarded (25ms)", nil},
		{"primary wins the race", hedge.Config{Trigger: hedge.After(20 * ms), Budget: unlimited},
			Script{Latencies: []time.Duration{30 * ms, 50 * ms}}, "2 attempts over 30ms: OK (30ms), hedge discarded (10ms), at 20ms", nil},
		{"three attempts", hedge.Config{Trigger: hedge.After(20 * ms), Attempts: 3, MaximumConcurrent: 3, Budget: unlimited},
			Script{Latencies: []time.Duration{100 * ms, 100 * ms, 1 * ms}}, "3 attempts over 41ms: hedge OK (1ms), at 40ms, discarded (41ms), hedge discarded (21ms), at 20ms", nil},
		{"no trigger", hedge.Config{},
			Script{Latencies: []time.Duration{100 * ms}}, "1 attempt over 100ms: OK (100ms)", nil},
		{"tied at once: the first to start service cancels the other", hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: unlimited},
			Script{Latencies: []time.Duration{7 * ms, 3 * ms}, ReportService: true}, "2 attempts over 7ms: hedge discarded (0s), OK (7ms)", nil},
		{"tied at once without service reports: a plain race", hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: hedge.Off}), Budget: unlimited},
			Script{Latencies: []time.Duration{7 * ms, 3 * ms}}, "2 attempts over 3ms: hedge OK (3ms), discarded (3ms)", nil},
		{"tied: a copy that starts within TieDelay is never tied", hedge.Config{Trigger: hedge.Tied()},
			Script{Latencies: []time.Duration{7 * ms, 3 * ms}, Queued: []time.Duration{ms / 2}, ReportService: true}, "1 attempt over 7ms: OK (7ms)", nil},
		{"tied: a copy queued past TieDelay is tied; the tie starts and cancels it", hedge.Config{Trigger: hedge.Tied()},
			Script{Latencies: []time.Duration{40 * ms, 3 * ms}, Queued: []time.Duration{30 * ms}, ReportService: true}, "2 attempts over 4ms: discarded (1ms), hedge OK (3ms), at 1ms", nil},
		{"tied: a longer TieDelay", hedge.Config{Trigger: hedge.Tied(hedge.Adaptive{TieDelay: 5 * ms})},
			Script{Latencies: []time.Duration{40 * ms, 3 * ms}, Queued: []time.Duration{30 * ms}, ReportService: true}, "2 attempts over 8ms: discarded (5ms), hedge OK (3ms), at 5ms", nil},
		{"tied: both copies queued; the first to start cancels the other", hedge.Config{Trigger: hedge.Tied()},
			Script{Latencies: []time.Duration{12 * ms, 20 * ms}, Queued: []time.Duration{4 * ms, 6 * ms}, ReportService: true}, "2 attempts over 12ms: hedge discarded (3ms), at 1ms, OK (12ms)", nil},
		{"tied without service reports: the tie races", hedge.Config{Trigger: hedge.Tied()},
			Script{Latencies: []time.Duration{7 * ms, 3 * ms}}, "2 attempts over 4ms: hedge OK (3ms), at 1ms, discarded (4ms)", nil},
		{"never answers", hedge.Config{},
			Script{}, "1 attempt over 0s: running (0s)", ErrUnfinished},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := hedge.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			log, err := RunScript(p, scriptStart, c.script)
			if !errors.Is(err, c.wantErr) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
			if got := log.String(); got != c.want {
				t.Errorf("log %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestScriptRetry(t *testing.T) {
	p, err := hedge.New(hedge.Config{Attempts: 2, Budget: budget.Config{Off: true}, Backoff: hedge.Backoff{Jitter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	fail := errors.New("503")
	log, err := RunScript(p, scriptStart, Script{
		Latencies: []time.Duration{4 * ms, 6 * ms},
		Outcomes:  []hedge.Outcome{{Class: hedge.Retriable, Err: fail}},
	})
	if err != nil {
		t.Fatalf("error %v", err)
	}
	// The retry starts after the default 10ms backoff (no jitter), 4ms into the call.
	if want := "2 attempts over 20ms: failed (4ms), retry OK (6ms), at 14ms"; log.String() != want {
		t.Errorf("log %q\nwant %q", log.String(), want)
	}
}
