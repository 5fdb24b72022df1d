// store_test.go runs runehost as a real process over stores whose files or
// records were damaged, and checks that each is an error naming what was
// damaged (never a Go panic, never an empty store shown as sound), that a
// corrupt record fails only what it belongs to, and that store verify,
// backup and restore do what they say.

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/runehost/runehost/store"
)

// TestMain lets the test binary be runehost itself: a child started by
// process() runs main.
func TestMain(m *testing.M) {
	if os.Getenv("RUNEHOST_TEST_AS_CLI") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// process runs runehost as a process on the store dir.
func process(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RUNEHOST_TEST_AS_CLI=1", "RUNEHOST_STORE="+dir,
		"RUNEHOST_CACHE_DIR="+filepath.Join(os.TempDir(), "runehost-test-wazero-cache"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// filled makes a store of three runs of a prog (r1 to r3, the last
// waiting with a checkpoint in the value log) and two grants, each by a
// process of its own: each leaves a table.
func filled(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	hello := writeProg(t, `return "hello"`)
	big := writeProg(t, "var s = \"x\"\nvar i = 0\nwhile i < 17 { s = s + s; i += 1 }\nlet e = await {key: \"go\"}\nreturn len(s)")
	for _, args := range [][]string{{"run", "--native", hello}, {"run", "--native", hello}, {"run", "--native", "--replace", big}, {"grant", "--prog", "p", "approval"}, {"grant", "--prog", "p", "tool.env:HOME"}} {
		if code, _, errs := process(t, dir, args...); code != exitOK && code != exitWaiting {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	return dir
}

// corruptRecord writes garbage at a record of a closed store.
func corruptRecord(t *testing.T, dir string, key store.Key) {
	t.Helper()
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(store.Synced, func(tx *store.Tx) error { return tx.PutRaw(key, []byte{0xa2, 0x01}) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func sstFiles(t *testing.T, dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	slices.Sort(m)
	if len(m) < 3 {
		t.Fatalf("want 3 tables or more: %v", m)
	}
	return m
}

func flipByte(t *testing.T, path string, off int) {
	b, _ := os.ReadFile(path)
	b[off] ^= 0xff
	os.WriteFile(path, b, 0o644)
}

// A damaged file makes every command fail with an error naming it, exit 3,
// and nothing of the store changes; store verify names it too, exit 1.
func TestDamagedStoreFiles(t *testing.T) {
	badgerFiles(t)
	good := filled(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) string
	}{
		{"truncated table", func(t *testing.T, dir string) string {
			p := sstFiles(t, dir)[0]
			os.Truncate(p, 500)
			return filepath.Base(p)
		}},
		{"flipped table byte", func(t *testing.T, dir string) string {
			p := sstFiles(t, dir)[1]
			flipByte(t, p, 100)
			return filepath.Base(p)
		}},
		{"truncated MANIFEST", func(t *testing.T, dir string) string {
			os.Truncate(filepath.Join(dir, "MANIFEST"), 50)
			return "MANIFEST"
		}},
		{"deleted table", func(t *testing.T, dir string) string {
			p := sstFiles(t, dir)[2]
			os.Remove(p)
			return filepath.Base(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			file := tc.damage(t, dir)
			before, _ := os.ReadDir(dir)
			for _, cmd := range [][]string{{"ps"}, {"grants"}, {"inspect", "r1"}} {
				code, out, errs := process(t, dir, cmd...)
				if code != exitInternal || !strings.Contains(errs, file) || !strings.Contains(errs, "store damaged") || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") || out != "" {
					t.Fatalf("%v: exit %d, stdout %q, stderr %.600q", cmd, code, out, errs)
				}
			}
			after, _ := os.ReadDir(dir)
			if len(before) != len(after) {
				t.Fatalf("files changed: %d, now %d", len(before), len(after))
			}
			code, out, _ := process(t, dir, "store", "verify")
			if code != exitFailed || !strings.Contains(out, "damaged: ") || !strings.Contains(out, file) || !strings.Contains(out, ": 1 problem (runehost store verify --accept") {
				t.Fatalf("verify: exit %d, %q", code, out)
			}
		})
	}
}

// A corrupt record fails only the invocation or grant it belongs to.
func TestCorruptRecordsCLI(t *testing.T) {
	dir := filled(t)
	corruptRecord(t, dir, store.K("inv", "r2"))
	code, out, errs := process(t, dir, "ps")
	if code != exitOK || !strings.Contains(out, "r1 ") || !strings.Contains(out, "r3 ") || !strings.Contains(out, "damaged") || !strings.Contains(out, "inv/r2") {
		t.Fatalf("ps: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs = process(t, dir, "ps", "--status", "damaged", "--jsonl"); code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"invocation":"r2"`) {
		t.Fatalf("ps --status damaged: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs = process(t, dir, "inspect", "r2"); code != exitOK || !strings.Contains(out, "damaged: record inv/r2") || !strings.Contains(out, "allowance") {
		t.Fatalf("inspect r2: exit %d, %q, %q", code, out, errs)
	}
	corruptRecord(t, dir, store.K("cp", "r3"))
	if code, out, errs = process(t, dir, "inspect", "r3"); code != exitOK || !strings.Contains(out, "damaged: record cp/r3") || !strings.Contains(out, "r3  waiting") {
		t.Fatalf("inspect r3: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs = process(t, dir, "resume", "r3"); code == exitOK || !strings.Contains(errs, "r3: stored checkpoint") {
		t.Fatalf("resume r3: exit %d, %q", code, errs)
	}
	// Resume made it runnable to look again at what it waits for (Ready),
	// and the turn that could not read its checkpoint paused it.
	if _, out, _ = process(t, dir, "ps"); !strings.Contains(out, "r3         running (paused)") {
		t.Fatalf("r3 not paused: %q", out)
	}
	corruptRecord(t, dir, store.K("grant", "p", "approval"))
	if code, out, errs = process(t, dir, "grants"); code != exitOK || !strings.Contains(out, "tool.env:HOME") || !strings.Contains(out, "damaged, allows nothing") {
		t.Fatalf("grants: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs = process(t, dir, "grant", "--prog", "p", "tool.env:USER"); code != exitOK {
		t.Fatalf("grant beside it: exit %d, %q", code, errs)
	}
	if code, _, errs = process(t, dir, "revoke", "--prog", "p", "tool.env:HOME"); code != exitOK {
		t.Fatalf("revoke beside it: exit %d, %q", code, errs)
	}
	if code, _, errs = process(t, dir, "revoke", "--prog", "p", "approval"); code != exitOK {
		t.Fatalf("revoke it: exit %d, %q", code, errs)
	}
	if _, out, _ = process(t, dir, "grants"); strings.Contains(out, "damaged") || !strings.Contains(out, "tool.env:USER") {
		t.Fatalf("grants after: %q", out)
	}
	code, out, _ = process(t, dir, "store", "verify")
	if code != exitFailed || strings.Count(out, "damaged: ") != 2 || !strings.Contains(out, "inv/r2") || !strings.Contains(out, "cp/r3") {
		t.Fatalf("verify: exit %d, %q", code, out)
	}
}

// A value log cut short: the invocation whose checkpoint was in it is
// damaged, named with the log; the others are listed.
func TestTruncatedValueLogCLI(t *testing.T) {
	badgerFiles(t)
	dir := filled(t)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	cut := false
	for _, l := range logs {
		if fi, _ := os.Stat(l); fi.Size() > 64<<10 {
			os.Truncate(l, 1000)
			cut = true
		}
	}
	if !cut {
		t.Fatalf("no value log holds a checkpoint: %v", logs)
	}
	code, out, errs := process(t, dir, "inspect", "r3")
	if code != exitOK || !strings.Contains(out, "damaged: record cp/r3") {
		t.Fatalf("inspect: exit %d, %q, %q", code, out, errs)
	}
	if code, out, _ = process(t, dir, "store", "verify"); code != exitFailed || !strings.Contains(out, "cp/r3") {
		t.Fatalf("verify: exit %d, %q", code, out)
	}
}

func TestStoreVerifyBackupRestore(t *testing.T) {
	badgerFiles(t)
	dir := filled(t)
	code, out, errs := process(t, dir, "store", "verify")
	if code != exitOK || !strings.Contains(out, "is sound") {
		t.Fatalf("verify: exit %d, %q, %q", code, out, errs)
	}
	_, ps, _ := process(t, dir, "ps")
	_, grants, _ := process(t, dir, "grants")
	file := filepath.Join(t.TempDir(), "backup")
	if code, _, errs = process(t, dir, "store", "backup", file); code != exitOK || !strings.Contains(errs, "backed up") {
		t.Fatalf("backup: exit %d, %q", code, errs)
	}
	if code, _, errs = process(t, dir, "store", "restore", file); code != exitUsage || !strings.Contains(errs, "not empty") {
		t.Fatalf("restore over the store: exit %d, %q", code, errs)
	}
	into := filepath.Join(t.TempDir(), "restored")
	if code, _, errs = process(t, into, "store", "restore", file); code != exitOK {
		t.Fatalf("restore: exit %d, %q", code, errs)
	}
	if _, ps2, _ := process(t, into, "ps"); ps2 != ps {
		t.Fatalf("ps of the restored store:\n%s\nwant\n%s", ps2, ps)
	}
	if _, g2, _ := process(t, into, "grants"); g2 != grants {
		t.Fatalf("grants of the restored store:\n%s\nwant\n%s", g2, grants)
	}
	if code, out, _ = process(t, into, "store", "verify"); code != exitOK {
		t.Fatalf("verify the restored store: exit %d, %q", code, out)
	}
	if code, out, errs = process(t, into, "send", "r3", "go", "1"); code != exitOK || out != "131072\n" {
		t.Fatalf("the restored r3 goes on: exit %d, %q, %q", code, out, errs)
	}
}

// A disk that fills mid-run: the run stops with an error naming the
// reserve (not a SIGBUS in the value log), the invocation is paused, the
// store still opens for ps, and once there is space again resume finishes
// it. The small disk is a tmpfs, which only root may mount.
func TestDiskFillsMidRun(t *testing.T) {
	badgerFiles(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=200m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	t.Setenv("RUNEHOST_STORE_RESERVE", "16MiB")
	t.Setenv("RUNEHOST_CHECKPOINT_STEPS", "1")
	dir := filepath.Join(mnt, "store")
	// Each slice stores some 140 KiB of new chunks (one digit over and
	// over, another each slice), in the value log.
	f := writeProg(t, "var s = \"\"\nvar n = 0\nwhile n < 800 { n += 1; s = str(n % 7) * 140000 }\nreturn n")
	code, _, errs := process(t, dir, "run", "--native", f, "--slice", "200")
	if code != exitInternal || !strings.Contains(errs, "disk space below the store's reserve") || strings.Contains(errs, "SIGBUS") || strings.Contains(errs, "fatal error") {
		t.Fatalf("run: exit %d, %.1500s", code, errs)
	}
	code, out, errs := process(t, dir, "ps")
	if code != exitOK || !strings.Contains(out, "r1") || !strings.Contains(out, "(paused)") {
		t.Fatalf("ps: exit %d, %q, %q", code, out, errs)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=400m"); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = process(t, dir, "resume", "r1", "--native"); code != exitOK || out != "800\n" {
		t.Fatalf("resume: exit %d, %q, %.1500s", code, out, errs)
	}
}

// badgerFiles skips a test of Badger's own files (their damage, its backup,
// its value log filling a disk) when the suite runs on another backend.
func badgerFiles(t *testing.T) {
	if b := os.Getenv("RUNEHOST_STORE_BACKEND"); b != "" && b != "badger" {
		t.Skipf("a test of Badger's files; the store is on %s", b)
	}
}

// On a disk under the store's reserve, an operator's command either
// refuses with nothing written or does what it says, and ps agrees with
// what it printed. Under the reserve but above its floor (an eighth of
// it), cancel and revoke, which stop work, go through; send, resume and
// grant, which start it, refuse. Under the floor every one refuses. The
// disk is made full by a reserve larger than its free space.
func TestOperatorCommandsOnAFullDisk(t *testing.T) {
	badgerFiles(t)
	dir := filepath.Join(t.TempDir(), "store")
	f := writeProg(t, `return await {key: "go"}`)
	for _, inv := range []string{"r1", "r2"} {
		if code, _, errs := process(t, dir, "run", "--native", f); code != exitWaiting {
			t.Fatalf("run %s: exit %d, %q", inv, code, errs)
		}
	}
	if code, _, errs := process(t, dir, "grant", "--prog", "p", "approval"); code != exitOK {
		t.Fatalf("grant: exit %d, %q", code, errs)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := st.Bavail * uint64(st.Bsize)
	status := func(inv string) string {
		t.Helper()
		code, out, errs := process(t, dir, "ps")
		if code != exitOK {
			t.Fatalf("ps: exit %d, %q", code, errs)
		}
		for _, line := range strings.Split(out, "\n") {
			if fs := strings.Fields(line); len(fs) > 1 && fs[0] == inv {
				return fs[1]
			}
		}
		t.Fatalf("ps has no %s: %q", inv, out)
		return ""
	}
	grants := func() string {
		t.Helper()
		_, out, _ := process(t, dir, "grants")
		return out
	}
	granted := grants()
	under := false // under the reserve, above its floor
	// refused runs a command that must refuse before it writes anything:
	// under the floor the store does not even open for writing.
	refused := func(args ...string) {
		t.Helper()
		code, out, errs := process(t, dir, args...)
		if code == exitOK || !strings.Contains(errs, "disk space below the store's reserve") || under && !strings.Contains(errs, "nothing done") {
			t.Errorf("%v: exit %d, %q, %q; want it refused, nothing done", args, code, out, errs)
		}
	}
	// Under the floor: nothing goes through, nothing is written.
	t.Setenv("RUNEHOST_STORE_RESERVE", fmt.Sprint(16*free))
	refused("cancel", "r1")
	refused("send", "r1", "go", "1")
	refused("resume", "r1")
	refused("grant", "--prog", "p", "approval")
	refused("revoke", "--prog", "p", "approval")
	refused("gc", "--older-than", "0s")
	t.Setenv("RUNEHOST_STORE_RESERVE", "")
	if s := status("r1"); s != "waiting" {
		t.Fatalf("after the refused commands r1 is %s", s)
	}
	if g := grants(); g != granted {
		t.Fatalf("after the refused commands the grants are %q, were %q", g, granted)
	}
	// Under the reserve, above its floor: what stops work goes through.
	t.Setenv("RUNEHOST_STORE_RESERVE", fmt.Sprint(2*free))
	under = true
	refused("send", "r2", "go", "1")
	refused("resume", "r2")
	if code, _, errs := process(t, dir, "cancel", "r1"); code != exitOK || !strings.Contains(errs, "cancelled: r1") {
		t.Errorf("cancel: exit %d, %q", code, errs)
	}
	if code, _, errs := process(t, dir, "revoke", "--prog", "p", "approval"); code != exitOK || !strings.Contains(errs, "revoked: approval") {
		t.Errorf("revoke: exit %d, %q", code, errs)
	}
	t.Setenv("RUNEHOST_STORE_RESERVE", "")
	if s1, s2 := status("r1"), status("r2"); s1 != "cancelled" || s2 != "waiting" {
		t.Fatalf("r1 %s, r2 %s; want cancelled, waiting", s1, s2)
	}
	if code, out, errs := process(t, dir, "send", "r2", "go", "5"); code != exitOK || out != "5\n" {
		t.Fatalf("with room again, send: exit %d, %q, %q", code, out, errs)
	}
}
