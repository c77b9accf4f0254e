package execmode

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// commandAttr puts the command in a process group of its own, so the
// whole group can be signalled. The kernel SIGKILLs the command when the
// thread that started it ends. Pdeathsig follows the thread, not the
// process, so the guard locks that thread for life (RunGuard).
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// awaitExit blocks until p has exited but leaves it unreaped; reap then
// collects it. p's pid is also its process group's id. Unreaped, it
// cannot be reused while the guard kills what is left of the group.
func awaitExit(p *os.Process) (reap func() (*os.ProcessState, error)) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return p.Wait
}

// selfExe is the running electd's binary, for the guard. /proc/self/exe
// works even when the file was replaced or deleted since electd started.
func selfExe() (string, error) { return "/proc/self/exe", nil }
