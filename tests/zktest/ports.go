package zktest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A reservedPort is a loopback TCP port owned by this process for the life of an ensemble.
//
// Three guards keep anyone else off it:
//   - ports are drawn at random below the kernel's ephemeral range, so outgoing
//     connections and other programs' listen(":0") never get them, even while a server is
//     down or a follower's quorum port is not bound (only a leader binds it);
//   - a lock file (flock, released by the kernel when the process dies) under
//     $TMPDIR/zktest-ports keeps other test binaries using this package off it;
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
	lo, hi := portRange()
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
		lock, ok := lockPort(port)
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

// portRange returns [lo, hi) to draw ports from: below the ephemeral range when there is
// room, else (0, 0), meaning "let the kernel choose".
func portRange() (lo, hi int) {
	const floor = 20000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	ephLo, err := strconv.Atoi(f[0])
	if err != nil || ephLo < floor+2000 {
		return 0, 0
	}
	return floor, ephLo
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

// lockPort takes the cross-process lock of port. It reports false when another live
// process holds it. If lock files cannot be used at all, it returns (nil, true).
func lockPort(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "zktest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, true
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // shared by every user's tests; best effort
	path := filepath.Join(dir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		_, statErr := os.Stat(path)
		return nil, statErr != nil // exists but unusable: treat as taken
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
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
