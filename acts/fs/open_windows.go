// open_windows.go holds the side of opening for Windows, which has no pipes
// to block on by name.

package fs

const (
	openFlags = 0
	dirFlag   = 0
)
