// space_test.go checks the disk reserve: with the free space faked, and on
// a real, small file system that fills up (where Badger, unchecked, dies of
// a SIGBUS in its value log).

package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// Writes are refused below the reserve (free space less the holes in
// Badger's logs), and nothing of them is written; UpdateInReserve goes on
// while the free space itself is above an eighth of it; space coming back
// lets writes through again.
func TestReserve(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 40)
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Reserve: 64 << 20, FreeSpace: func() (uint64, error) { return uint64(free.Load()), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	debt, _ := sparseDebt(dir)
	put := func(update func(Durability, func(*Tx) error) error, k string) error {
		return update(Synced, func(tx *Tx) error { return tx.PutRaw(K("cp", k), bytes.Repeat([]byte{1}, 1<<20)) })
	}
	if err := put(s.Update, "a"); err != nil {
		t.Fatal(err)
	}
	free.Store(int64(debt) + 60<<20) // below the reserve
	s.space.measured = s.space.measured.AddDate(-1, 0, 0)
	err = put(s.Update, "b")
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "reserve is 64 MiB") {
		t.Fatalf("got %v", err)
	}
	s.View(func(tx *Tx) error {
		if _, ok, _ := tx.GetRaw(K("cp", "b")); ok {
			t.Fatal("a refused write was written")
		}
		return nil
	})
	if err := put(s.UpdateInReserve, "c"); err != nil {
		t.Fatalf("in the reserve: %v", err)
	}
	free.Store(7 << 20) // below the reserve's floor: the writes ending work need only free space, not the holes
	s.space.measured = s.space.measured.AddDate(-1, 0, 0)
	if err := put(s.UpdateInReserve, "d"); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("below the floor: %v", err)
	}
	free.Store(1 << 40)
	if err := put(s.Update, "e"); err != nil {
		t.Fatalf("space back: %v", err)
	}
}

// A transaction is counted before it is written: one larger than the
// headroom left above the reserve is refused.
func TestReserveCountsTheWrite(t *testing.T) {
	dir := t.TempDir()
	var debt uint64
	s, err := Open(Options{Dir: dir, Reserve: 16 << 20, FreeSpace: func() (uint64, error) { return debt + 40<<20, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	debt, _ = sparseDebt(dir)
	s.space.measured = s.space.measured.AddDate(-1, 0, 0)
	big := func(n int) error {
		return s.Update(Buffered, func(tx *Tx) error {
			for i := range n {
				if err := tx.PutRaw(K("cp", uint64(i)), bytes.Repeat([]byte{1}, 4<<20)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := big(7); !errors.Is(err, ErrNoSpace) { // 28 MiB: 12 MiB would be left
		t.Fatalf("28 MiB with 24 MiB above the reserve: %v", err)
	}
	if err := big(5); err != nil { // 20 MiB
		t.Fatalf("20 MiB with 24 MiB above the reserve: %v", err)
	}
}

// On a real file system that fills up, writes stop with ErrNoSpace, and
// the process lives: without the reserve, Badger's writes into its mapped
// value log die of a SIGBUS. The small file system is a tmpfs, which only
// root may mount.
func TestDiskFills(t *testing.T) {
	if dir := os.Getenv("STORE_FILL_CHILD"); dir != "" {
		s, err := Open(Options{Dir: dir, Reserve: 16 << 20})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(3)
		}
		for i := 0; ; i++ {
			err := s.Update(Synced, func(tx *Tx) error { return tx.PutRaw(K("cp", uint64(i)), bytes.Repeat([]byte{byte(i)}, 256<<10)) })
			if err != nil {
				fmt.Printf("after %d: %v\n", i, err)
				if err := s.Close(); err != nil {
					fmt.Println("close:", err)
				}
				os.Exit(0)
			}
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=200m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFills$")
	cmd.Env = append(os.Environ(), "STORE_FILL_CHILD="+mnt+"/store")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ErrNoSpace.Error()) || strings.Contains(string(out), "close:") {
		t.Fatalf("the writer: %v\n%.2000s", err, out)
	}
	s, err := Open(Options{Dir: mnt + "/store", Reserve: 1 << 20})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}
