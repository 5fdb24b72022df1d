// verify_test.go makes this package's tests check every checkpoint the
// machine writes directly against the one Snapshot and Encode give.

package port

import (
	"fmt"
	"os"
)

func init() {
	verifyEncoding = func(diff string) {
		fmt.Fprintln(os.Stderr, diff)
		os.Exit(2) // whichever test or fuzz input got here, it fails
	}
}
