package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The calibration's sleeps (2,000 service times on -workers sleepers) did not look at the
// run's context: "hedgeload -workers 1" interrupted (Ctrl-C) during them went on sleeping for
// 27 s before it exited, and a second Ctrl-C was swallowed too. They stop with the run.
func TestCalibrationSleepsStopWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	// 100 sleeps of 100 ms on one worker: 10 s unless they stop.
	_, err := calibrate(ctx, HTTP2, 1, constant{100 * time.Millisecond}, 100, 100, 0)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the calibration ended %v after it was started, its context done after 100ms", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
}
