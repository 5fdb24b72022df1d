//go:build linux && (mips || mipsle || mips64 || mips64le)

// fionbio_mips_linux.go: ioctl's FIONBIO on MIPS, whose ioctl numbers are
// its own.

package tool

const fionbio = 0x667e
