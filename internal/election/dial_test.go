package election

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Connection failures are warned about at once, then at most once per
// dialWarnEvery with a count (issue 12: they showed at debug level only).
func TestDialFailuresWarnedRateLimited(t *testing.T) {
	u := newUnit(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on
	for i := 0; i < 5; i++ {
		if _, err := u.s.dial("tcp", addr, time.Second); err == nil {
			t.Fatal("dial of a closed port succeeded")
		}
	}
	if n := strings.Count(u.log.String(), "cannot reach zookeeper server"); n != 1 {
		t.Fatalf("%d warnings after 5 failures in no time, want 1", n)
	}
	u.clk.Advance(dialWarnEvery)
	_, _ = u.s.dial("tcp", addr, time.Second)
	logs := u.log.String()
	if n := strings.Count(logs, "cannot reach zookeeper server"); n != 2 || !strings.Contains(logs, "failures=5") ||
		!strings.Contains(logs, "server="+addr) {
		t.Fatalf("want a second warning naming the server and counting 5 failures:\n%s", logs)
	}
}
