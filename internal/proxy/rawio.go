package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Reads and writes of the proxy's TCP connections as raw system calls
// (docs/design/proxy.md, "A hop's cost").
//
// Go's runtime parks its monitor thread (sysmon) while every processor is
// idle, and wakes it at the next system call that goes through the
// runtime's bookkeeping (entersyscall); awake, it polls every 20 µs until
// the processors are idle again. A proxy answering one request at a time
// goes idle between requests, so each request woke that thread several
// times, on the cores the application and the client needed then. The
// bookkeeping is there to hand the processor over when a call blocks; a
// read or write of a non-blocking socket never blocks, so these are made
// raw, with the runtime's poller still waiting (and keeping deadlines)
// when the socket has nothing to give or no room. The calls themselves are
// in rawio_raw.go; rawio_race.go keeps package syscall's under -race.

// rawTCP is a TCP connection whose Read and Write are raw system calls;
// everything else is the *net.TCPConn's.
type rawTCP struct {
	*net.TCPConn
	rc syscall.RawConn
}

// newRawTCP wraps c when it is a TCP connection; other connections are
// returned as they are.
func newRawTCP(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawTCP{TCPConn: tc, rc: rc}
}

func (c *rawTCP) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, e := sysRead(fd, p)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits for data
			}
			n, errno = r, e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawTCP) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, e := sysWrite(fd, p[n:])
			switch e {
			case 0:
				n += r
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the poller waits for room
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is err as net's own Read and Write report it.
func (c *rawTCP) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err // RawConn's "raw-read": a deadline, or a closed connection
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
