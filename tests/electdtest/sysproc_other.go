//go:build !linux

package electdtest

import "syscall"

// sysProcAttr puts electd in its own process group (see sysproc_linux.go; only Linux can
// tie a child's life to its parent's).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
