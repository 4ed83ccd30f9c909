//go:build race

package hedgehttp

const raceEnabled = true
