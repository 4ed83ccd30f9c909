package main

import (
	"context"
	"errors"
	"strings"
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

// A calibration call that never answers fails the calibration at its timeout, as a point's
// call does at callTimeout; it held the run until it was interrupted.
func TestCalibrationCallTimesOut(t *testing.T) {
	defer func(d time.Duration) { calibrationCallTimeout = d }(calibrationCallTimeout)
	calibrationCallTimeout = 200 * time.Millisecond
	start := time.Now()
	_, _, err := roundTrips(context.Background(), HTTP2, 1, 2, 100, 0, time.Hour, 0)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a calibration whose calls never answer ended after %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "took longer than 200ms") {
		t.Errorf("err = %v, want the calls' timeout", err)
	}
}
