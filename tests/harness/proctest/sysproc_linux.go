package proctest

import "syscall"

// dieWithParent has the kernel kill the child when the thread that started
// it exits (Start's thread lives as long as the process).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
