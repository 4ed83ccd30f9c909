package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The calibration that runs before the first point is bounded in time as the points are:
// each protocol's sleeps n service times on one server's workers and sends n calls (2,000) to
// that one server, at the highest load's rate (a closed loop's from its callers). checkPace
// looked at the points only, whose calls go to every replica and may be as few as 100: at
// -loads 0.001 -calls 100 (a point of about 2.5 hours, accepted) the calibration sent its 2,000
// calls at 0.011 a second, 49 hours without a word before the first point; a closed loop of
// 100 calls of three minutes from one caller on one worker (5 hours) slept 2,000 of them first.
func TestCalibrationPaceBounded(t *testing.T) {
	for _, args := range [][]string{
		{"-loads", "0.001", "-calls", "100"},
		{"-loads", "0.001,0.002", "-calls", "100", "-replicas", "4"},
		{"-concurrency", "1", "-workers", "1", "-service", "exponential:3m", "-calls", "100"},
	} {
		_, err := parseArgs(args, &bytes.Buffer{})
		var ue *usageError
		if err == nil {
			t.Errorf("parseArgs(%q) accepted a run whose calibration alone takes more than %v", args, maxPointPace)
		} else if !errors.As(err, &ue) || !strings.Contains(err.Error(), "calibration") {
			t.Errorf("parseArgs(%q) = %v, want a usage error about the calibration", args, err)
		}
	}
	// A tiny load is fine when the highest one is not: the calibration runs at the highest.
	for _, args := range [][]string{
		nil,
		{"-loads", "0.001,50", "-calls", "100"},
		{"-loads", "1"},
		{"-concurrency", "64", "-service", "stragglers", "-workers", "256"},
		{"-protocol", "both", "-loads", "5"},
	} {
		if _, err := parseArgs(args, &bytes.Buffer{}); err != nil {
			t.Errorf("parseArgs(%q) = %v", args, err)
		}
	}
}
