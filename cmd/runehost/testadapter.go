//go:build !crashtest

// testadapter.go: the product has no test adapters; the crash-test build
// registers them (testadapter_crashtest.go).

package main

import "github.com/runehost/runehost/host"

// testAdapters registers nothing.
func testAdapters(*host.Engine) {}
