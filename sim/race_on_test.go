//go:build race

package sim

// raceEnabled: the race detector slows the engine about 30×, so statistical tests run fewer
// calls (with a tolerance widened to match) when it is on. Run `go test` without -race for the
// full-size checks.
const raceEnabled = true
