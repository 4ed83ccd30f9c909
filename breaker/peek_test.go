package breaker

import (
	"testing"
	"time"
)

// Peek reads the state without changing it: an open breaker past its OpenFor reads half-open,
// tells OnStateChange nothing, and turns half-open at the next State.
func TestPeek(t *testing.T) {
	var told []State
	b := mustNew(t, Config{OpenFor: 5 * time.Second, OnStateChange: func(_, to State, _ time.Time) { told = append(told, to) }})
	call(b, 0, Success)
	for range 5 {
		call(b, time.Second, Failure)
	}
	if s := b.Peek(at(2 * time.Second)); s != Open {
		t.Fatalf("Peek right after tripping = %v, want open", s)
	}
	n := len(told)
	if s := b.Peek(at(time.Minute)); s != HalfOpen {
		t.Errorf("Peek past OpenFor = %v, want half-open", s)
	}
	if len(told) != n {
		t.Errorf("Peek told OnStateChange %v", told[n:])
	}
	if s := b.State(at(time.Minute)); s != HalfOpen || len(told) != n+1 || told[n] != HalfOpen {
		t.Errorf("State past OpenFor = %v, OnStateChange told %v; want half-open, told once", s, told[n:])
	}
}
