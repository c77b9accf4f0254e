//go:build !linux

package execmode

import (
	"os"
	"syscall"
)

// commandAttr puts the command in a process group of its own. Pdeathsig
// is Linux only, so here a command outlives a guard that is killed. The
// guard's own exits all kill the group.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// awaitExit reaps p as it exits. Without waitid's WNOWAIT, the group's id
// may in principle be reused before the guard kills the rest of the group.
func awaitExit(p *os.Process) (reap func() (*os.ProcessState, error)) {
	st, err := p.Wait()
	return func() (*os.ProcessState, error) { return st, err }
}

func selfExe() (string, error) { return os.Executable() }
