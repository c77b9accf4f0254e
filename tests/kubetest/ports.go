package kubetest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// port is a loopback TCP port this process holds for a cluster's life.
// Ports are drawn below the kernel's ephemeral range (no outgoing
// connection gets one) and locked with the same lock files tests/zktest
// uses ($TMPDIR/zktest-ports/<port>), so test binaries of both packages
// running at once never pick the same port.
type port struct {
	n    int
	lock *os.File
}

func (p *port) addr() string { return "127.0.0.1:" + strconv.Itoa(p.n) }

func (p *port) release() {
	if p.lock != nil {
		p.lock.Close()
		p.lock = nil
	}
}

func reservePort() (*port, error) {
	lo, hi := 20000, ephemeralLow()
	var lastErr error
	for range 500 {
		n := 0
		if hi > lo {
			n = lo + rand.IntN(hi-lo)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(n))
		if err != nil {
			lastErr = err
			continue
		}
		n = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		f, ok := lockPort(n)
		if !ok {
			continue
		}
		return &port{n: n, lock: f}, nil
	}
	return nil, fmt.Errorf("kubetest: no free loopback port: %v", lastErr)
}

// ephemeralLow is the bottom of the kernel's ephemeral range, or 0 (let
// the kernel choose) when it leaves no room below.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 22000 {
		return 0
	}
	return n
}

func lockPort(n int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "zktest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)), os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}
