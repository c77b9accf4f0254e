//go:build !race && !msan && !asan

package proxy

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysRead and sysWrite are read(2) and write(2) of a non-blocking
// socket without the runtime's system call bookkeeping (rawio.go).
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}
