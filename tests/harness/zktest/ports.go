package zktest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/electd/electd/tests/harness/freeport"
)

// A reservedPort is a loopback TCP port owned by this process for the life of an ensemble.
//
// Three guards keep anyone else off it:
//   - ports are drawn at random below the kernel's ephemeral range, and a lock file keeps
//     other test binaries off them (tests/harness/freeport), even while a server is down or a
//     follower's quorum port is not bound (only a leader binds it);
//   - while no server listens on it, a bound but not listening socket holds it (a client
//     dialling it is refused, as with a free port).
type reservedPort struct {
	port int
	lock *os.File // nil when locking is unavailable

	mu       sync.Mutex
	fd       int // placeholder socket, -1 when not held
	released bool
}

var (
	portsMu    sync.Mutex
	portsInUse = map[int]bool{}
)

// reservePort picks and holds a free port.
func reservePort() (*reservedPort, error) {
	lo, hi := freeport.Range()
	var lastErr error
	for attempt := 0; attempt < 500; attempt++ {
		want := 0
		if hi > lo {
			want = lo + rand.IntN(hi-lo)
		}
		fd, port, err := bindPlaceholder(want)
		if err != nil {
			lastErr = err
			continue
		}
		portsMu.Lock()
		taken := portsInUse[port]
		if !taken {
			portsInUse[port] = true
		}
		portsMu.Unlock()
		if taken {
			_ = syscall.Close(fd)
			continue
		}
		lock, ok := freeport.Lock(port)
		if !ok {
			forgetPort(port)
			_ = syscall.Close(fd)
			continue
		}
		return &reservedPort{port: port, lock: lock, fd: fd}, nil
	}
	return nil, fmt.Errorf("zktest: no free loopback port: %v", lastErr)
}

func forgetPort(port int) {
	portsMu.Lock()
	delete(portsInUse, port)
	portsMu.Unlock()
}

// bindPlaceholder binds (without listening) a close-on-exec socket to 127.0.0.1:port
// (port 0: any) with SO_REUSEADDR, so that the server can bind the port right after the
// placeholder is closed even if old connections on it linger in TIME_WAIT.
func bindPlaceholder(port int) (fd, bound int, err error) {
	syscall.ForkLock.RLock()
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, 0, err
	}
	if err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	}
	if err != nil {
		_ = syscall.Close(fd)
		return -1, 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return -1, 0, err
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		_ = syscall.Close(fd)
		return -1, 0, errors.New("unexpected socket address")
	}
	return fd, in4.Port, nil
}

// addr returns "127.0.0.1:<port>".
func (r *reservedPort) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// unhold closes the placeholder socket so that a server can bind the port.
func (r *reservedPort) unhold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd >= 0 {
		_ = syscall.Close(r.fd)
		r.fd = -1
	}
}

// hold binds the placeholder socket again (best effort) once no server uses the port.
func (r *reservedPort) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd >= 0 {
		return
	}
	if fd, _, err := bindPlaceholder(r.port); err == nil {
		r.fd = fd
	}
}

// release gives the port up for good. Idempotent.
func (r *reservedPort) release() {
	r.unhold()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	if r.lock != nil {
		_ = r.lock.Close() // drops the flock
		r.lock = nil
	}
	forgetPort(r.port)
}
