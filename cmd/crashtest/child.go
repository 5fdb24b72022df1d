// child.go runs one runehost command under a kill plan: it answers the
// command's sync reports, keeps the durable image of the store, kills the
// command, and after a simulated power cut puts the durable image back.

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runehost/runehost/internal/crashtest"
)

// syncEnv is the store's crash-test hook's variable (store/synchook_crashtest.go).
const syncEnv = "RUNEHOST_CRASH_SYNC"

// How a command is killed.
type killMode int

const (
	noKill    killMode = iota
	killDelay          // SIGKILL after a delay: the page cache survives
	killSync           // SIGKILL at sync report n, before it is answered: the page cache survives
	killPower          // a power cut: what sync n left durable is all that survives
)

func (m killMode) String() string {
	return [...]string{"none", "delay", "sync", "power"}[m]
}

// plan says how one command is to be killed.
type plan struct {
	mode  killMode
	n     int           // killSync: the report to kill at; killPower: the last sync that completes (0: none)
	delay time.Duration // killDelay: from the start; killPower: after sync n
}

// result is how a command ended.
type result struct {
	out, errs string
	code      int // exit status; -1 when killed
	killed    bool
	power     bool // killed by a power cut: the store was put back to its durable image
	syncs     int  // sync reports seen
	took      time.Duration
	plan      plan
}

// acked reports whether the command ran to its end and said so: exit 0, or
// 4 (the run waits).
func (r result) acked() bool { return !r.killed && (r.code == 0 || r.code == 4) }

// run runs runehost with args on the round's store under p.
func (h *harness) run(p plan, args ...string) result {
	r := h.r
	args = append(args, "--store", r.store)
	switch args[0] {
	case "run", "resume", "send", "resolve":
		args = append(args, "--cache-dir", h.cache)
	}
	c := exec.Command(h.bin, args...)
	var out, errs strings.Builder
	c.Stdout, c.Stderr = &out, &errs
	repR, repW, err := os.Pipe()
	check(err)
	ansR, ansW, err := os.Pipe()
	check(err)
	c.ExtraFiles = []*os.File{repW, ansR} // fds 3 and 4
	c.Env = append(os.Environ(), syncEnv+"=3,4", "RUNEHOST_CHECKPOINT_EVERY=20ms",
		crashtest.JournalEnv+"="+r.world.Path, crashtest.DelayEnv+"="+strconv.Itoa(h.delayMS))

	var durable string // killPower: the durable image, log files as of their last sync
	if p.mode == killPower {
		durable = h.tempDir("durable")
		if _, err := os.Stat(r.store); err == nil {
			check(copyDir(r.store, durable))
		}
	}
	start := time.Now()
	check(c.Start())
	repW.Close()
	ansR.Close()
	defer ansW.Close()

	reports := make(chan []string)
	go func() {
		s := bufio.NewScanner(repR)
		for s.Scan() {
			names, _ := strings.CutPrefix(s.Text(), "sync")
			reports <- strings.Fields(names)
		}
		close(reports)
	}()
	defer func(rep <-chan []string) {
		go func() {
			for range rep { // lines written just before the exit
			}
		}()
	}(reports)
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	var timer <-chan time.Time
	switch {
	case p.mode == killDelay, p.mode == killPower && p.n == 0:
		timer = time.After(p.delay)
	}
	res := result{}
	kill := func() {
		c.Process.Signal(syscall.SIGKILL)
		res.killed = true
	}
	var waitErr error
loop:
	for {
		select {
		case names, ok := <-reports:
			if !ok {
				reports = nil // the command closed its end: it is exiting
				continue
			}
			res.syncs++
			k := res.syncs
			switch {
			case p.mode == killSync && k == p.n:
				kill()
				continue
			case p.mode == killPower && k == p.n+1:
				kill() // the power went before this sync was answered
				continue
			case p.mode == killPower && k <= p.n:
				// The command is blocked in its sync; stop it whole, so that
				// nothing else moves while the synced logs are copied.
				c.Process.Signal(syscall.SIGSTOP)
				waitStopped(c.Process.Pid)
				for _, name := range names {
					if err := copyFile(filepath.Join(r.store, name), filepath.Join(durable, name)); err != nil && !os.IsNotExist(err) {
						check(err)
					}
				}
				c.Process.Signal(syscall.SIGCONT)
				if k == p.n {
					timer = time.After(p.delay)
				}
			}
			ansW.Write([]byte{'c'})
		case <-timer:
			timer = nil
			kill()
		case waitErr = <-exited:
			break loop
		}
	}
	res.took = time.Since(start)
	res.out, res.errs = out.String(), errs.String()
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
		res.code, res.killed = -1, true
	case errors.As(waitErr, &ee):
		res.code, res.killed = ee.ExitCode(), false // it ended before the kill took
	case waitErr != nil:
		check(waitErr)
	default:
		res.killed = false
	}
	if res.killed && p.mode == killPower {
		res.power = true
		check(powerCut(r.store, durable))
	}
	if durable != "" {
		os.RemoveAll(durable)
	}
	return res
}

// isLog reports whether a store file is one of Badger's logs, which reach
// the disk only when synced. Badger syncs every other file itself (tables
// before the manifest names them, the manifest at each change), so those
// are taken as they are at the cut.
func isLog(name string) bool {
	return strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, ".mem")
}

// powerCut puts back in store what survives a power cut: each log file as it
// was at its last sync (none, if it was never synced), the other files as
// they are. A log that is no longer there was deleted, its content in a
// table.
func powerCut(store, durable string) error {
	if _, err := os.Stat(store); os.IsNotExist(err) {
		return nil // killed before it made the store
	}
	img := store + ".cut"
	if err := os.MkdirAll(img, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(store)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if isLog(name) {
			if err := os.Rename(filepath.Join(durable, name), filepath.Join(img, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		if err := copyFile(filepath.Join(store, name), filepath.Join(img, name)); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(store); err != nil {
		return err
	}
	return os.Rename(img, store)
}

// waitStopped waits until every thread of pid is stopped.
func waitStopped(pid int) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return // gone
		}
		stopped := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
			if err != nil {
				continue
			}
			// pid (comm) state ...: the state follows the last ')'.
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || (s[i+2] != 'T' && s[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// copyDir copies the regular files of src into dst.
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// The whence values of lseek that find data and holes in a sparse file.
const (
	seekData = 3
	seekHole = 4
)

// copyFile copies src to dst, holes as holes: Badger's logs are mapped
// files of twice their nominal size, mostly unwritten.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, fi.Mode().Perm())
	if err != nil {
		return err
	}
	defer out.Close()
	size := fi.Size()
	for off := int64(0); off < size; {
		data, err := in.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // no data after off
		}
		if err != nil {
			return err
		}
		hole, err := in.Seek(data, seekHole)
		if err != nil {
			return err
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(out, in, hole-data); err != nil && !errors.Is(err, io.EOF) {
			return err // a file that shrank while copied keeps what was read
		}
		off = hole
	}
	return out.Truncate(size)
}
