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

// sysPeek looks at what is readable without taking it or waiting
// (appconn.go): n bytes, 0 at the end of the stream, or the errno.
func sysPeek(fd uintptr, b []byte) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
