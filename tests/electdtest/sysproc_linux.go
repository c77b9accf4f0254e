package electdtest

import "syscall"

// sysProcAttr puts electd in its own process group, so a terminal's Ctrl-C reaches the
// test or demo (which then stops it in order) and not electd directly, and has the
// kernel kill it if the process that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
