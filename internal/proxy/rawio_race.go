//go:build race || msan || asan

package proxy

import "syscall"

// Under the race detector (and the sanitizers) reads and writes go
// through package syscall, whose Read and Write tell the detector what a
// socket synchronises: a write to it happens before the read of those
// bytes. Raw calls would hide that edge and report races in tests whose
// goroutines hand data over a socket. The runtime's bookkeeping comes
// back with them, which only the benchmarks (built without -race) see.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return toErrno(n, err)
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return toErrno(n, err)
}

// sysPeek is rawio_raw.go's, through package syscall.
func sysPeek(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

func toErrno(n int, err error) (int, syscall.Errno) {
	if err == nil {
		return n, 0
	}
	e, ok := err.(syscall.Errno)
	if !ok {
		e = syscall.EIO
	}
	return 0, e
}
