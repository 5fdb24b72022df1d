//go:build linux && (ppc64 || ppc64le)

// fionbio_ppc_linux.go: ioctl's FIONBIO on POWER, whose ioctl numbers are
// its own (_IOW('f', 126, int)).

package tool

const fionbio = 0x8004667e
