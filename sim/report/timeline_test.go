package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

func sampleTimelines() []sim.Timeline {
	return []sim.Timeline{
		{Setup: "no hedge", LoadPct: 95, Cancellation: "ignored", Seed: 8, SlowAfterMs: 200, P99Ms: 235.94,
			Seconds: []sim.Second{{Calls: 1000, Slow: 8, P99Ms: 168.4}, {Calls: 1010, Slow: 16, P99Ms: 236.8}, {Calls: 990, Slow: 22, P99Ms: 313}}},
		{Setup: "<mine>", Balancer: "p2c", LoadPct: 95, Cancellation: "ignored", Seed: 8, SlowAfterMs: 200, P99Ms: 307.4,
			Seconds: []sim.Second{
				{Calls: 1000, Slow: 3, P99Ms: 167.9, Hedges: 99, Won: 16, Refused: map[string]int{"no_evidence": 172, "backlog": 1}},
				{Calls: 1000, Slow: 87, P99Ms: 358.3, Hedges: 48},
				{Calls: 1080, Failed: 20, Slow: 1051, P99Ms: sim.Failed, Refused: map[string]int{"backlog": 13}},
			}},
	}
}

func TestTimelineMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTimelineMarkdown(&b, sampleTimelines()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## no hedge\n\n95 % load, cancellation ignored, seed 8: p99 235.9 ms\n",
		"## <mine> · p2c\n",
		"| second | calls | failed | over 200 ms (failed among them) | p99 (ms) | hedges | won | refused |\n",
		"| 0 | 1000 | 0 | 3 | 167.9 | 99 | 16 | backlog 1, no_evidence 172 |\n", // refusals in the order of their names
		"| 2 | 1080 | 20 | 1051 | failed | 0 | 0 | backlog 13 |\n",              // a p99 on a failed call
		"the hedges that answered first in it (one sent late in a second may win in the next, so won can exceed hedges)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("timeline.md lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "\n| 1 |"); n != 2 {
		t.Errorf("timeline.md has %d rows for second 1, want one a timeline:\n%s", n, md)
	}
}

func TestTimelineHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTimelineHTML(&b, sampleTimelines()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<svg "); n != 2 {
		t.Errorf("%d charts, want one a timeline", n)
	}
	// Three series a chart, each a point a second.
	if n := strings.Count(page, "<polyline "); n != 6 {
		t.Errorf("%d series, want 6", n)
	}
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "<polyline ") {
			pts := line[strings.Index(line, `points="`)+len(`points="`):]
			pts = pts[:strings.Index(pts, `"`)]
			if n := len(strings.Fields(pts)); n != 3 {
				t.Errorf("a series of %d points, want 3: %s", n, line)
			}
		}
	}
	for _, want := range []string{
		"<title>Timeline: 95 % load, cancellation ignored, seed 8</title>",
		"<h2>&lt;mine&gt; · p2c</h2>", // names escaped
		"<title>second 0: 1000 calls, 0 failed, 3 slow, p99 167.9 ms; 99 hedges sent, 16 won; refused: backlog 1, no_evidence 172</title>",
		"<title>second 2: 1080 calls, 20 failed, 1051 slow, p99 failed; 0 hedges sent, 0 won; refused: backlog 13</title>",
		">1000<", // the scale reaches the largest count
	} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline.html lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("timeline.html is not self-contained")
	}
}
