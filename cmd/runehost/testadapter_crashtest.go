//go:build crashtest

// testadapter_crashtest.go, in crash-test builds only (go build -tags
// crashtest), registers the crash harness's test adapters (test.record,
// test.lookup) when RUNEHOST_CRASH_JOURNAL names their journal.

package main

import (
	"os"
	"strconv"
	"time"

	"github.com/runehost/runehost/host"
	"github.com/runehost/runehost/internal/crashtest"
)

// testAdapters registers the test adapters when the harness asks for them.
func testAdapters(e *host.Engine) {
	if path := os.Getenv(crashtest.JournalEnv); path != "" {
		ms, _ := strconv.Atoi(os.Getenv(crashtest.DelayEnv))
		crashtest.Register(e, crashtest.Journal{Path: path}, time.Duration(ms)*time.Millisecond)
	}
}
