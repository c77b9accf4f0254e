//go:build !linux

package promtest

import "syscall"

// sysProcAttr puts the server in its own process group (see sysproc_linux.go;
// only Linux can tie a child's life to its parent's).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
