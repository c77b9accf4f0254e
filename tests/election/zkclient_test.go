package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// TestZKClientReconnectWithWatches covers the go-zookeeper patch in
// third_party/: on every reconnect the client re-sets its watches while
// answers to requests queued during the outage already arrive. v1.0.4 read
// the zxid for that SetWatches while the receive loop wrote it (a data race
// the race detector reported in TestZKServerOutages on CI). Clients with
// watches and requests in flight go through three server restarts; the race
// detector must stay quiet and every watch must still fire afterwards.
//
// The sessions must outlive three restarts of a JVM on a loaded machine: a
// restarted server gives the sessions it restores a session timeout from
// the moment it loads them, and the clients get back in only once it
// serves. So this test's server has 1 s ticks and its clients 20 s
// sessions, not the package's 4 s.
func TestZKClientReconnectWithWatches(t *testing.T) {
	ens := zktest.Start(t, zktest.Options{TickTime: time.Second})
	servers := ens.Servers()
	const n = 8
	const dir = "/zkclient"
	dial := func() *zk.Conn {
		c, _, err := zk.Connect(servers, 20*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false), zk.WithDialer(boundedDial))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		waitFor(t, liveWithin, "a session", func() bool { return c.State() == zk.StateHasSession })
		return c
	}

	admin := dial()
	ensurePath(t, admin, dir)

	conns := make([]*zk.Conn, n)
	watches := make([]<-chan zk.Event, n)
	for i := range conns {
		conns[i] = dial()
		_, _, ch, err := conns[i].ChildrenW(dir)
		if err != nil {
			t.Fatalf("client %d: children watch: %v", i, err)
		}
		watches[i] = ch
	}

	// Requests in flight across the restarts: their answers are what the
	// receive loop records while SetWatches is being built.
	eachUntilEnd(t, conns, func(ctx context.Context, c *zk.Conn) {
		for ctx.Err() == nil {
			_, _, _ = c.Get(dir)
		}
	})

	hasSession := func(want bool) func() bool {
		return func() bool {
			for _, c := range conns {
				if (c.State() == zk.StateHasSession) != want {
					return false
				}
			}
			return true
		}
	}
	for round := range 3 {
		if err := ens.StopAll(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("round %d: every client lost the server", round), hasSession(false))
		if err := ens.StartAll(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, fmt.Sprintf("round %d: every client back in its session", round), hasSession(true))
	}

	// Nothing changed while the server was down, so no watch fired yet; a
	// change now must reach every client through its re-set watch.
	for i, ch := range watches {
		select {
		case ev := <-ch:
			t.Fatalf("client %d: watch fired before any change: %+v", i, ev)
		default:
		}
	}
	if _, err := admin.Create(dir+"/child", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create child: %v", err)
	}
	for i, ch := range watches {
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeChildrenChanged || ev.Path != dir {
				t.Errorf("client %d: watch event %+v, want children changed on %s", i, ev, dir)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("client %d: children watch did not fire after three reconnects", i)
		}
	}
}
