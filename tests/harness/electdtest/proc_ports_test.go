package electdtest

import (
	"net"
	"testing"
)

// A port is handed out once per process: a daemon's addresses come from
// several calls, and a port given twice made two of them clash.
func TestFreeAddrsNeverRepeat(t *testing.T) {
	seen := map[string]bool{}
	for i := range 3000 {
		f := FreeAddr
		if i%3 == 0 {
			f = FreeAddrPair
		}
		addr, err := f()
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(addr)
		if seen[port] {
			t.Fatalf("call %d: port %s of %s handed out twice", i, port, host)
		}
		seen[port] = true
	}
}
