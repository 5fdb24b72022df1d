//go:build linux && !(ppc64 || ppc64le || mips || mipsle || mips64 || mips64le)

// fionbio_linux.go: ioctl's FIONBIO, which x/sys/unix does not name on
// Linux, where it is the generic number.

package tool

const fionbio = 0x5421
