// confine_linux.go holds how a worker confines itself before any byte of its
// tool runs: limits of its own, not dumpable, no new privileges, Landlock
// over its mounts and the network, and a seccomp filter of the system calls
// the Go runtime and wazero need.

package tool

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// minLandlock is the Landlock ABI a worker needs: 1 confines the file
// system; TCP (4) and the scopes (6) are taken where the kernel has them,
// and the seccomp filter refuses sockets whatever it has.
const minLandlock = 1

var (
	landlockOnce sync.Once
	landlockABI  int
)

// LandlockABI returns the kernel's Landlock ABI version, 0 without it.
func LandlockABI() int {
	landlockOnce.Do(func() {
		if v, err := llsys.LandlockGetABIVersion(); err == nil {
			landlockABI = v
		}
	})
	return landlockABI
}

var warnOnce sync.Once

// confinable refuses to run tools on a kernel without Landlock, unless the
// operator accepted the risk; then it says so once.
func confinable(withoutLandlock bool) error {
	hostNotDumpable()
	if LandlockABI() >= minLandlock {
		return nil
	}
	if !withoutLandlock {
		return &Error{What: "confine", Msg: ErrNoLandlock.Error(), Err: ErrNoLandlock}
	}
	warnOnce.Do(func() {
		fmt.Fprintln(os.Stderr, "runehost: warning: this kernel has no Landlock; tools run without file-system and network confinement (--allow-tools-without-landlock)")
	})
	return nil
}

// Limits of a worker's own, besides its tool's.
const (
	workerFiles   = 256     // open descriptors
	workerThreads = 128     // the Go runtime's threads
	workerSpace   = 8 << 30 // address space beyond the tool's memory
)

// limit sets what a worker may use before it compiles its tool: no core
// dump (it could hold what the tool read), not dumpable (no process of the
// same user may read its memory), descriptors and threads bounded.
func limit() error {
	for _, l := range []struct {
		res int
		n   uint64
	}{{unix.RLIMIT_CORE, 0}, {unix.RLIMIT_NOFILE, workerFiles}} {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.n, Max: l.n}); err != nil {
			return fmt.Errorf("rlimit %d: %w", l.res, err)
		}
	}
	debug.SetMaxThreads(workerThreads)
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return err
	}
	return dropCapabilities()
}

// keptCapabilities are what a worker run as root keeps: those of file
// access, so that a tool reads and writes in its mounts what the host's
// user could. Everything else goes, CAP_SYS_PTRACE above all: without it
// the worker cannot read a process that is not dumpable (the host makes
// itself so, hostNotDumpable), its environment and memory included.
const keptCapabilities = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID

// dropCapabilities drops every other capability from every thread (they
// are each thread's own: libpsx runs capset on each).
func dropCapabilities() error {
	head := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&head, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted|data[1].Permitted == 0 {
		return nil // not root: nothing to drop
	}
	for i := range data {
		keep := uint32(keptCapabilities >> (32 * i))
		data[i].Effective &= keep
		data[i].Permitted &= keep
		data[i].Inheritable = 0
	}
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&head)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

var dumpableOnce sync.Once

// hostNotDumpable makes the process that starts workers not dumpable: no
// process of its user without CAP_SYS_PTRACE, a worker least of all, may
// read its environment, memory or descriptors through /proc, whatever
// file system check or Landlock rule stands or falls.
func hostNotDumpable() {
	dumpableOnce.Do(func() { unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

// limitSpace bounds the worker's address space: its tool's memory and
// what the runtime and wazero need beside it.
func limitSpace(pages uint32) error {
	space := uint64(pages)*65536 + workerSpace
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: space, Max: space}); err != nil {
		return fmt.Errorf("rlimit %d: %w", unix.RLIMIT_AS, err)
	}
	return nil
}

// workerCPU is the CPU time a worker may use over all its runs, past its
// first run's own bound: the hard limit, which only ever comes down.
const workerCPU = 30 * 60

var xcpuOnce sync.Once

// limitCPU bounds the CPU time of the run to come, as a backstop to its
// fuel and its clock: seconds past what the worker used already. Past it
// the worker exits (SIGXCPU, which the Go runtime would ignore); past the
// hard limit the kernel kills it. last is a run whose bound reached the
// hard limit: the worker serves no other.
func limitCPU(seconds uint64) (last bool, err error) {
	xcpuOnce.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, unix.SIGXCPU)
		go func() {
			<-c
			fmt.Fprintln(os.Stderr, "fatal error: the worker used all the CPU time its run may have")
			os.Exit(2)
		}()
	})
	var used unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &used); err != nil {
		return false, err
	}
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CPU, &l); err != nil {
		return false, err
	}
	cur := uint64(used.Sec) + 1 + seconds
	if l.Max == unix.RLIM_INFINITY {
		l.Max = cur + workerCPU
	}
	if cur >= l.Max {
		cur, last = l.Max, true
	}
	if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: cur, Max: l.Max}); err != nil {
		return false, fmt.Errorf("rlimit %d: %w", unix.RLIMIT_CPU, err)
	}
	return last, nil
}

// recvFlags: descriptors a worker receives are closed on exec.
const recvFlags = unix.MSG_CMSG_CLOEXEC

// filter applies the seccomp filter to every thread of the worker (TSYNC),
// with no_new_privs: from here on it has only the system calls of policy,
// and signals only its own threads.
func filter(off layers) error {
	if off.Seccomp {
		return nil
	}
	p := policy
	p.Syscalls = append([]seccomp.SyscallGroup{{Action: seccomp.ActionAllow, NamesWithCondtions: []seccomp.NameWithConditions{
		{Name: "tgkill", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: uint64(os.Getpid())}}},
	}}}, p.Syscalls...)
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: p})
}

// confine applies Landlock to every thread of the worker, its mounts open
// already: their directories, read-only or writable as granted; no TCP bind
// or connect; no signal or abstract socket outside the worker.
func confine(mounts []Mount, off layers) error {
	if off.Landlock || LandlockABI() < minLandlock {
		return nil
	}
	var rules []landlock.Rule
	for _, m := range mounts {
		if m.Write {
			rules = append(rules, landlock.RWDirs(m.Host).WithRefer())
		} else {
			rules = append(rules, landlock.RODirs(m.Host))
		}
	}
	return landlock.V11.BestEffort().Restrict(rules...)
}

// policy is the worker's seccomp filter once confined: what the Go runtime
// (threads, memory, signals, its poller), wazero (the compiled tool's
// memory) and the WASI calls on the mounts and the pipes need. Everything
// else fails with EPERM: no process, no exec, no socket, no ptrace, no
// mount, no other process's memory. clone3 says ENOSYS, so that glibc
// (in a cgo build) falls back to clone, whose flags the filter can read.
var policy = seccomp.Policy{
	DefaultAction: seccomp.ActionErrno,
	Syscalls: []seccomp.SyscallGroup{{
		Action: seccomp.ActionAllow,
		Names: []string{
			// memory and threads
			"mmap", "munmap", "mprotect", "madvise", "mremap", "brk", "mincore",
			"futex", "sched_yield", "sched_getaffinity", "gettid", "getpid",
			"set_robust_list", "rseq", "exit", "exit_group", "restart_syscall",
			// signals
			"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
			// time
			"clock_gettime", "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep",
			"getrandom", "getrlimit",
			// the poller
			"epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait",
			"eventfd2", "pipe2", "poll", "ppoll", "pselect6",
			// descriptors
			"read", "write", "readv", "recvmsg", // recvmsg: a run's descriptors come on the control socket
			"writev", "pread64", "pwrite64", "preadv", "pwritev",
			"close", "lseek", "fcntl", "dup", "dup3", "fstat", "fstatfs", "ftruncate", "fsync", "fdatasync",
			"fchmod", "getdents64",
			// names, beneath a mount's descriptor (os.Root)
			"openat", "openat2", "newfstatat", "statx", "readlinkat", "mkdirat", "unlinkat",
			"renameat", "renameat2", "symlinkat", "fchmodat", "utimensat", "faccessat", "faccessat2",
		},
		NamesWithCondtions: []seccomp.NameWithConditions{
			// Threads only: a new process would be outside the filter's
			// accounting of what the worker is.
			{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_THREAD}}},
			// Its own limits only (pid 0): another process's of the same
			// user would be the kernel's to change for it.
			{Name: "prlimit64", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: 0}}},
			// isatty, and a descriptor's blocking mode.
			{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.Equal, Value: unix.TCGETS}}},
			{Name: "ioctl", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.Equal, Value: fionbio}}},
		},
	}, {
		Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
		Names:  []string{"clone3"},
	}},
}

// closeInherited closes the descriptors a worker inherited past its own
// (0-3): a Go process opens every descriptor close-on-exec, so one that is
// not was handed down from whoever started the host.
func closeInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		unix.CloseRange(4, ^uint(0), 0)
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 4 {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}
