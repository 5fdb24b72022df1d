// jitcache.go keeps compiled progs' modules on disk, beside wazero's
// compilation cache: a new process finds a prog's wasm without compiling
// the source, generating the wasm and metering it again.

package wasmvm

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
	"github.com/runehost/runehost/guest/wasmgen"
	"github.com/runehost/runehost/wasmvm/fuel"
)

// A kept module's file: the magic, the program's digest, its functions'
// marks (wasmgen.Compiled), the module, and a SHA-256 of all before it.
const jitMagic = "RUNEWASM"

// errJitFile is a kept module's file that is not one (damaged, cut short,
// or of another layout): it is generated again and written anew.
var errJitFile = errors.New("wasmvm: damaged compiled module file")

// buildID is the Go build ID of this executable, a hash of all that went
// into it: a kept module is named by it as well, so that a rebuilt host
// (a generator changed without a bump of wasmgen.Version among it) never
// reads a module the old one wrote. Where it cannot be read (not ELF),
// modules are not kept.
var buildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := elf.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	if s := f.Section(".note.go.buildid"); s != nil {
		if b, err := s.Data(); err == nil {
			return string(b)
		}
	}
	return ""
})

// jitPath is where the module of source is kept under dir: named by the
// source and everything the module depends on besides it; "" if modules
// cannot be kept here.
func jitPath(dir string, source []byte) string {
	id := buildID()
	if dir == "" || id == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(id))
	h.Write(source)
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, wasmgen.Version)
	b = binary.LittleEndian.AppendUint32(b, compile.Version)
	b = binary.LittleEndian.AppendUint32(b, fuel.Version)
	for _, w := range machine.TheLayout.Words() {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	h.Write(b)
	return filepath.Join(dir, "rune", hex.EncodeToString(h.Sum(nil))+".wasm")
}

// keptOnDisk says source's program has a module kept under dir.
func keptOnDisk(dir string, source []byte) bool {
	path := jitPath(dir, source)
	if path == "" {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// readJit reads a kept module: the program's digest, its functions'
// marks and the module's bytes.
func readJit(path string) (digest uint64, fns, bin []byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, nil, err
	}
	n := len(b) - sha256.Size
	if n < len(jitMagic)+12 || string(b[:len(jitMagic)]) != jitMagic {
		return 0, nil, nil, errJitFile
	}
	if sum := sha256.Sum256(b[:n]); !bytes.Equal(sum[:], b[n:]) {
		return 0, nil, nil, errJitFile
	}
	r := b[len(jitMagic):n]
	digest = binary.LittleEndian.Uint64(r)
	nf := binary.LittleEndian.Uint32(r[8:])
	r = r[12:]
	if uint64(nf) > uint64(len(r)) {
		return 0, nil, nil, errJitFile
	}
	return digest, r[:nf], r[nf:], nil
}

// writeJit keeps a module, atomically: a reader finds the whole file or
// none. Failures are ignored: the cache only saves time.
func writeJit(path string, digest uint64, fns, bin []byte) {
	b := append([]byte(jitMagic), make([]byte, 12, 12+len(fns)+len(bin)+sha256.Size)...)
	binary.LittleEndian.PutUint64(b[len(jitMagic):], digest)
	binary.LittleEndian.PutUint32(b[len(jitMagic)+8:], uint32(len(fns)))
	b = append(append(b, fns...), bin...)
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
