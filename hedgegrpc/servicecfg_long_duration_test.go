package hedgegrpc

import (
	"testing"
	"time"
)

// A duration one past the longest time.Duration (2^63 ns), which a float64 of seconds rounds
// to, is refused: converted, it became the most negative Duration, a backoff or hedging delay
// of none.
func TestProtoDurationAtTheEdgeOfDuration(t *testing.T) {
	for _, s := range []string{"9223372036.854775807s", "9223372036.8547758s", "9223372037s"} {
		if d, err := protoDuration("x", s); err == nil {
			t.Errorf("protoDuration(%q) = %v, want it refused", s, d)
		}
	}
	if d, err := protoDuration("x", "9223372036s"); err != nil || d != 9223372036*time.Second {
		t.Errorf("protoDuration(9223372036s) = %v, %v; want 9223372036s", d, err)
	}
}
