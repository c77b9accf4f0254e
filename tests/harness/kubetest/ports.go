package kubetest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"

	"github.com/electd/electd/tests/harness/freeport"
)

// port is a loopback TCP port this process holds for a cluster's life.
// Ports are drawn below the kernel's ephemeral range and locked against
// other test binaries (tests/harness/freeport).
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
	lo, hi := freeport.Range()
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
		f, ok := freeport.Lock(n)
		if !ok {
			continue
		}
		return &port{n: n, lock: f}, nil
	}
	return nil, fmt.Errorf("kubetest: no free loopback port: %v", lastErr)
}
