//go:build !race

package hedgeotel_test

const raceEnabled = false
