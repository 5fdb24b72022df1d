// Package repo holds nothing but tests of the repository's own promises:
// what its Makefile and README say and do (repo_test.go).
package repo
