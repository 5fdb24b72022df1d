//go:build race

// race_on_test.go: the race detector is on (make race); tests of volume,
// not of concurrency, skip themselves there.

package host

const raceDetector = true
