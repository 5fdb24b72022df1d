//go:build !race

// race_off_test.go: the race detector is off.

package host

const raceDetector = false
