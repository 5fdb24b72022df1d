//go:build !unix

// umask_other.go holds umask where there is none.

package server

func umask(m int) int { return 0 }

func ownDir(d string) error { return nil }
