package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Ports come from below the ephemeral range, are free, are never handed
// out twice, and stay locked: another binary's Lock (the same file, taken
// again) is refused.
func TestAddrs(t *testing.T) {
	lo, hi := Range()
	seen := map[int]bool{}
	for range 50 {
		a, err := Addrs(2)
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if hi > lo && (port < lo || port+1 >= hi) {
			t.Errorf("%s: outside [%d, %d)", a, lo, hi)
		}
		for _, q := range []int{port, port + 1} {
			if seen[q] {
				t.Fatalf("port %d handed out twice", q)
			}
			seen[q] = true
			if f, ok := Lock(q); ok && f != nil {
				t.Errorf("port %d: locked again", q)
				f.Close()
			}
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				t.Fatalf("port %d: %v", q, err)
			}
			ln.Close()
		}
	}
}
