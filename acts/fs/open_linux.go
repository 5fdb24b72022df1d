// open_linux.go holds the Linux side of opening: the flags that keep an open
// from blocking or taking a terminal.

package fs

import "golang.org/x/sys/unix"

const (
	openFlags = unix.O_NONBLOCK | unix.O_NOCTTY
	dirFlag   = unix.O_DIRECTORY
)
