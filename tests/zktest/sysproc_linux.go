package zktest

import "syscall"

// sysProcAttr puts a server in its own process group (so that a signal reaches the whole
// JVM) and has the kernel kill it if the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
