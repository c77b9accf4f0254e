package zksession

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// Connection failures are warned about at once, then at most once per
// dialWarnEvery (issue 12: they showed at debug level only), each warning
// with the attempts and the time since the last session (issue 40: the
// count started again at every warning, and read 30 each time).
func TestDialFailuresWarnedRateLimited(t *testing.T) {
	u := newUnit(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on
	fail := func(times int) {
		t.Helper()
		for range times {
			if _, err := u.s.dial("tcp", addr, time.Second); err == nil {
				t.Fatal("dial of a closed port succeeded")
			}
		}
	}
	warnings := func() []string {
		var out []string
		for line := range strings.Lines(u.log.String()) {
			if strings.Contains(line, "cannot reach zookeeper server") {
				out = append(out, line)
			}
		}
		return out
	}
	fail(5)
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "attempts_since_success=1 down_for=0s") {
		t.Fatalf("after 5 failures in no time, want one warning counting the first:\n%s", u.log)
	}
	for i, want := range []string{"attempts_since_success=6 down_for=30s", "attempts_since_success=7 down_for=1m0s"} {
		u.clk.Advance(dialWarnEvery)
		fail(1 + i) // the warning comes at the first
		w := warnings()
		if last := w[len(w)-1]; len(w) != i+2 || !strings.Contains(last, want) || !strings.Contains(last, "server="+addr) {
			t.Fatalf("want warning %d naming the server and saying %q:\n%s", i+2, want, u.log)
		}
	}

	// A session resets both: the next outage counts from 1 and warns at once.
	u.s.negotiatedID.Store(unitSession)
	u.s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	u.clk.Advance(time.Second)
	fail(1)
	if w := warnings(); len(w) != 4 || !strings.Contains(w[3], "attempts_since_success=1 down_for=0s") {
		t.Fatalf("after a session, want a fourth warning counting from 1:\n%s", u.log)
	}
}
