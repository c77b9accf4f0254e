//go:build unix && !linux

package zktest

import "syscall"

// sysProcAttr puts a server in its own process group, so that a signal reaches the whole JVM.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
