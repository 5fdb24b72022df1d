// kept.go holds a store directory's note of where its records are kept: a
// directory whose records are in NATS JetStream says so, and is never
// opened as a new, empty Badger store; a Badger directory is never served
// by a node that would start without its records.

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// keptName is the note's file in a store directory.
const keptName = "BACKEND"

// Kept is where a store directory's records are kept, as its note says.
type Kept struct {
	Backend  string   `json:"backend"`          // "jetstream"
	Stream   string   `json:"stream"`           // the stream that holds them
	Embedded bool     `json:"embedded"`         // on a node run inside a host, its files in DIR/nats
	Listen   string   `json:"listen,omitempty"` // that node's client address, when it listened
	URLs     []string `json:"urls,omitempty"`   // the servers, when not embedded
}

// ErrElsewhere is the error of a store opened on the wrong backend: its
// directory's records are kept elsewhere.
var ErrElsewhere = errors.New("its records are kept in another backend")

// ElsewhereError says where a directory's records are, when it is opened
// on a backend that does not hold them. Nothing was opened or created.
type ElsewhereError struct {
	Dir    string
	Kept   *Kept // where they are; nil when Badger holds them, or the note cannot be read
	Badger bool  // the directory is a Badger store (opened for an embedded node)
	Both   bool  // it holds a Badger store and a node's files, and no note says which is its
	Err    error // why the note cannot be read, when it cannot
}

func (e *ElsewhereError) Error() string {
	switch {
	case e.Both:
		return fmt.Sprintf("store %s holds both a Badger store and a NATS node's files (%s), and no note of which holds its records: an earlier runehost made the Badger store beside the node's files when a command ran there without the cluster; it is opened as neither", e.Dir, filepath.Join(e.Dir, "nats"))
	case e.Badger:
		return fmt.Sprintf("store %s is a Badger store: its records are in its files there, not in NATS JetStream, which would start without them", e.Dir)
	case e.Err != nil:
		return fmt.Sprintf("store %s: its note of where its records are kept (%s) cannot be read (%v): it is not opened as a Badger store, lest a new, empty one hide them", e.Dir, keptName, e.Err)
	case e.Kept.Embedded:
		return fmt.Sprintf("store %s keeps its records in NATS JetStream (stream %s), on a node a host ran there (its files in %s): it is not opened as a new, empty Badger store", e.Dir, e.Kept.Stream, filepath.Join(e.Dir, "nats"))
	}
	return fmt.Sprintf("store %s was served from NATS JetStream (stream %s on %s): it is not opened as a new, empty Badger store", e.Dir, e.Kept.Stream, strings.Join(e.Kept.URLs, ","))
}

func (e *ElsewhereError) Unwrap() error { return ErrElsewhere }

// readKept reads dir's note; nil when it has none. A directory with an
// embedded node's files and no Badger store, left by a host before notes
// were written, reads as embedded.
func readKept(dir string) (*Kept, error) {
	f, err := os.Open(filepath.Join(dir, keptName))
	if errors.Is(err, os.ErrNotExist) {
		if isDir(filepath.Join(dir, "nats")) {
			if exists(filepath.Join(dir, "MANIFEST")) {
				return nil, errBoth
			}
			return &Kept{Backend: "jetstream", Stream: "RUNEHOST (or the one it was given)", Embedded: true}, nil
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, err
	}
	var k Kept
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("not a note: %v", err)
	}
	if k.Backend != "jetstream" || k.Stream == "" || !k.Embedded && len(k.URLs) == 0 {
		return nil, fmt.Errorf("not a note of a JetStream store: %.200s", b)
	}
	return &k, nil
}

// WriteKept writes dir's note that its records are kept where k says,
// whole or not at all.
func WriteKept(dir string, k Kept) error {
	b, _ := json.MarshalIndent(k, "", "  ")
	tmp := filepath.Join(dir, keptName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, keptName)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: %w", err)
	}
	return syncDir(dir)
}

// errBoth is a directory with a Badger store and a node's files, and no
// note: which holds its records cannot be known.
var errBoth = errors.New("both a Badger store and a node's files")

// keptInBadger refuses dir to a Badger store when its note, or an embedded
// node's files, say its records are in JetStream.
func keptInBadger(dir string) error {
	k, err := readKept(dir)
	switch {
	case errors.Is(err, errBoth):
		return &ElsewhereError{Dir: dir, Both: true}
	case err != nil:
		return &ElsewhereError{Dir: dir, Err: err}
	case k != nil:
		return &ElsewhereError{Dir: dir, Kept: k}
	}
	return nil
}

// NotBadger refuses dir to a store on another backend (an embedded node's
// files, or the note of a host serving from it) when it is a Badger store:
// an *ElsewhereError.
func NotBadger(dir string) error {
	switch {
	case !exists(filepath.Join(dir, "MANIFEST")):
		return nil
	case isDir(filepath.Join(dir, "nats")) && !exists(filepath.Join(dir, keptName)):
		return &ElsewhereError{Dir: dir, Both: true}
	}
	return &ElsewhereError{Dir: dir, Badger: true}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
