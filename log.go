package hedge

import (
	"fmt"
	"strings"
	"time"
)

// Result is how one attempt ended.
type Result uint8

const (
	Running   Result = iota // still in flight (only in a log taken mid-call)
	OK                      // answered with success; the winner
	Failed                  // answered with a failure
	Discarded               // lost the race and was cancelled
	Cancelled               // cancelled because the caller gave up
)

func (r Result) String() string {
	switch r {
	case Running:
		return "running"
	case OK:
		return "OK"
	case Failed:
		return "failed"
	case Discarded:
		return "discarded"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// AttemptRecord is one attempt in a call's log.
type AttemptRecord struct {
	Index    int           // start order, 0 = first
	Hedge    bool          // sent as a concurrent copy
	Retry    bool          // sent as a sequential retry
	Offset   time.Duration // when it started, from the start of the call
	Duration time.Duration // how long it ran until it answered or was discarded
	Result   Result
	Err      error // the attempt's error, when it failed
}

// Log is the record of one call's attempts, in the order they ended.
type Log struct {
	Duration time.Duration // from the start of the call to its end
	Attempts []AttemptRecord
}

// String renders the log on one line, for example
//
//	2 attempts over 41ms: hedge OK (1ms), at 40ms, discarded (41ms)
//
// Attempts appear in the order they ended; each says whether it was a hedge or a retry, how
// it ended, how long it ran and, when it did not start with the call, when it started.
func (l Log) String() string {
	var b strings.Builder
	if len(l.Attempts) == 1 {
		b.WriteString("1 attempt")
	} else {
		fmt.Fprintf(&b, "%d attempts", len(l.Attempts))
	}
	fmt.Fprintf(&b, " over %s", roundDuration(l.Duration))
	for i, a := range l.Attempts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		switch {
		case a.Hedge:
			b.WriteString("hedge ")
		case a.Retry:
			b.WriteString("retry ")
		}
		fmt.Fprintf(&b, "%s (%s)", a.Result, roundDuration(a.Duration))
		if a.Offset > 0 {
			fmt.Fprintf(&b, ", at %s", roundDuration(a.Offset))
		}
	}
	return b.String()
}

// roundDuration keeps logs readable: whole milliseconds from 1ms up, microseconds below.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
