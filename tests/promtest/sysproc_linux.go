package promtest

import "syscall"

// sysProcAttr puts the server in its own process group, so a terminal's
// Ctrl-C reaches the test (which then stops it) and not the server, and has
// the kernel kill it if the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
