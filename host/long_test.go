// long_test.go: the switch of the long versions of the tests make test
// shortens.

package host

import "os"

// longTests: RUNEHOST_LONG=1 (make test-long) runs the long versions.
var longTests = os.Getenv("RUNEHOST_LONG") == "1"
