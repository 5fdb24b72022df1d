//go:build !crashtest

// synchook.go: in the product, a sync is only a sync. The crash-test build
// replaces this file with synchook_crashtest.go.

package store

import badger "github.com/dgraph-io/badger/v4"

// sync flushes a Synced commit to disk.
func (s *badgerStore) sync() error {
	_, err := s.syncLogs()
	return err
}

// testOptions leaves Badger's options as they are (tests may change it).
var testOptions = func(o badger.Options) badger.Options { return o }
