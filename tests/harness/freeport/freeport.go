// Package freeport picks loopback TCP ports for the processes the tests
// start (ZooKeeper servers, electd, the API server) so that test binaries
// running side by side (make test runs several packages at once) never
// take each other's:
//
//   - ports are drawn at random below the kernel's ephemeral range, so that
//     no outgoing connection's own port and no other program's listen on
//     port 0 takes one between the pick and the bind (a port the kernel
//     handed out for port 0 is in that range: a dataplane test's hundreds of
//     connections a second took one from a chaos test's electd);
//   - a lock file ($TMPDIR/zktest-ports/<port>, flock, released by the
//     kernel when the process dies) keeps other test binaries off it.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// floor is the lowest port drawn.
const floor = 20000

// Range is [lo, hi) to draw ports from: below the ephemeral range when it
// leaves room (2000 ports at least), else (0, 0): let the kernel choose.
func Range() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	eph, err := strconv.Atoi(f[0])
	if err != nil || eph < floor+2000 {
		return 0, 0
	}
	return floor, eph
}

// Lock takes port's cross-process lock; false when another live process
// holds it. Without usable lock files it returns (nil, true): the random
// draw alone then keeps binaries apart.
func Lock(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "zktest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, true
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // shared by every user's tests; best effort
	path := filepath.Join(dir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		_, statErr := os.Stat(path)
		return nil, statErr != nil // exists but unusable: taken
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// kept are the ports Addrs handed out in this process, with their locks,
// held until it exits: never handed out twice (the kernel gives a port
// just closed back to the next bind to port 0, about 1 in 7,000 here, and
// one daemon's http.addr then took its proxy.listen).
var kept struct {
	sync.Mutex
	ports map[int]*os.File
}

// Addrs returns a loopback address whose port and the n-1 after it are
// free now, locked for this process's life, and never returned before in
// this process.
func Addrs(n int) (string, error) {
	lo, hi := Range()
	var lastErr error
	for range 500 {
		base := 0
		if hi-n > lo {
			base = lo + rand.IntN(hi-n-lo)
		}
		base, err := bindable(base, n)
		if err != nil {
			lastErr = err
			continue
		}
		if keep(base, n) {
			return "127.0.0.1:" + strconv.Itoa(base), nil
		}
	}
	if lastErr == nil {
		lastErr = errors.New("every port drawn was taken")
	}
	return "", fmt.Errorf("freeport: no %d free consecutive loopback ports: %w", n, lastErr)
}

// bindable checks that base (0: one the kernel picks) and the n-1 after it
// can be bound now, and returns base.
func bindable(base, n int) (int, error) {
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			return 0, err
		}
		if i == 0 {
			base = ln.Addr().(*net.TCPAddr).Port
		}
		ln.Close()
	}
	return base, nil
}

// keep records base..base+n-1 as handed out and takes their locks, unless
// one was handed out before or is another process's.
func keep(base, n int) bool {
	kept.Lock()
	defer kept.Unlock()
	if kept.ports == nil {
		kept.ports = map[int]*os.File{}
	}
	for p := base; p < base+n; p++ {
		if _, ok := kept.ports[p]; ok {
			return false
		}
	}
	var locks []*os.File
	for p := base; p < base+n; p++ {
		f, ok := Lock(p)
		if !ok {
			for _, l := range locks {
				if l != nil {
					_ = l.Close()
				}
			}
			return false
		}
		locks = append(locks, f)
	}
	for i, f := range locks {
		kept.ports[base+i] = f
	}
	return true
}
